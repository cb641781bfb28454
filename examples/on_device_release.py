"""Learn a privacy mapping centrally, ship it as a file, release one user's ratings on her device.

The server fits a :class:`QuantizedPrivacyMapper` on the users who disclosed
their private attribute and saves it with ``mapper.save`` (a single ``.npz``: arrays
and JSON metadata with a SHA-256 digest; no pickle, so loading it cannot run
code). The device loads it (every part is validated: row-stochastic mapping,
prior a distribution, consistent shapes, digest) and releases its own row:
the cluster is computed locally, ``c_hat`` is drawn from the device's
operating-system entropy and only the profile of ``c_hat`` leaves the device.
"""

import os
import shutil
import tempfile
import warnings

import numpy as np

import privrelease
from privrelease.datasets import make_ratings
from privrelease.mappers import QuantizedPrivacyMapper

# ---------------------------------------------------------------- on the server
R, a, _ = make_ratings(2000, 60, random_state=0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    server_mapper = QuantizedPrivacyMapper(n_clusters=10, max_leakage=0.01).fit(R, a)  # random_state=None
folder = tempfile.mkdtemp()  # stands for the server's download area; removed at the end
path = os.path.join(folder, "mapping.npz")
server_mapper.save(path)
print(f"server: leakage {server_mapper.leakage_:.4f} bits, saved {os.path.getsize(path) / 1024:.1f} KiB to {path}")

# ---------------------------------------------------------------- on the device
device_mapper = privrelease.load(path)  # validated; raises ValueError on a damaged or altered file
my_ratings = R[[7]]  # the device only has its own row
released = device_mapper.transform(my_ratings)
cluster = device_mapper.quantize(my_ratings)[0]
print(f"device: my cluster {cluster}, output distribution {np.round(device_mapper.mapping_[cluster], 3)}")
print(f"device: I rated {my_ratings.nnz} items, I release {released.nnz} ratings:",
      dict(zip(released.indices.tolist(), released.data.tolist())))

shutil.rmtree(folder)
