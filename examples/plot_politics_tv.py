"""The Politics-and-TV preset: which shows give a viewer's party away.

Prints the most watched shows and how differently Democrats and Republicans
watch and rate them, then plots the watch share of each show by party (points
far from the diagonal leak the affiliation through *what* is rated).
Run: MPLBACKEND=Agg python examples/plot_politics_tv.py
"""

import matplotlib.pyplot as plt
import numpy as np

from privrelease.datasets import make_politics_tv

X, party, shows, genres = make_politics_tv(random_state=0, return_genres=True)
R = X.toarray()
dem, rep = party == 0, party == 1
share_d = (R[dem] > 0).mean(axis=0)
share_r = (R[rep] > 0).mean(axis=0)
order = np.argsort(-X.getnnz(axis=0))

print(f"{X.shape[0]} users ({dem.sum()} D, {rep.sum()} R), {X.shape[1]} shows, {X.nnz} ratings")
print(f"{'show':<34}{'genre':<15}{'watch D':>8}{'watch R':>8}")
for j in order[:10]:
    print(f"{shows[j]:<34}{genres[j]:<15}{share_d[j]:>8.2f}{share_r[j]:>8.2f}")

fig, ax = plt.subplots(figsize=(6, 5))
ax.scatter(share_d, share_r)
for j in np.argsort(-np.abs(share_d - share_r))[:6]:
    ax.annotate(shows[j], (share_d[j], share_r[j]), fontsize=8)
ax.plot([0, 0.8], [0, 0.8], "k--", lw=0.8)
ax.set_xlabel("share of Democrats who rated the show")
ax.set_ylabel("share of Republicans who rated the show")
fig.savefig("politics_tv_watch_shares.png", dpi=100)
print("wrote politics_tv_watch_shares.png")
