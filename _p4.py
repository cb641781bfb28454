import warnings, os, shutil
from pathlib import Path
from privrelease.datasets import load_movielens_100k, load_movielens_1m
base = Path("/tmp/probe18/ml"); shutil.rmtree(base, ignore_errors=True)
def mk(name, data="1\t1\t5\t100\n2\t2\t3\t100\n", user="1|30|F|w|1\n2|40|M|o|2\n", item="1|A|x\n2|B|y\n", extra=None):
    d = base / name; d.mkdir(parents=True)
    if data is not None: (d/"u.data").write_bytes(data.encode() if isinstance(data, str) else data)
    if user is not None: (d/"u.user").write_bytes(user.encode() if isinstance(user, str) else user)
    if item is not None: (d/"u.item").write_bytes(item.encode("latin-1") if isinstance(item, str) else item)
    for k, v in (extra or {}).items(): (d/k).write_text(v)
    return d
cases = {
 "dup_pair_diff": dict(data="1\t1\t5\t100\n1\t1\t1\t200\n2\t2\t3\t100\n"),
 "dup_pair_same_ts": dict(data="1\t1\t5\t100\n1\t1\t1\t100\n2\t2\t3\t100\n"),
 "crlf": dict(data="1\t1\t5\t100\r\n2\t2\t3\t100\r\n", user="1|30|F|w|1\r\n2|40|M|o|2\r\n"),
 "bom": dict(data="\ufeff1\t1\t5\t100\n2\t2\t3\t100\n"),
 "bom_user": dict(user="\ufeff1|30|F|w|1\n2|40|M|o|2\n"),
 "dup_item_titles": dict(item="1|A|x\n1|Z|x\n2|B|y\n"),
 "dup_user_same": dict(user="1|30|F|w|1\n1|30|F|w|1\n2|40|M|o|2\n"),
 "user_no_rating": dict(user="1|30|F|w|1\n2|40|M|o|2\n3|50|F|o|3\n"),
 "item_no_rating": dict(item="1|A|x\n2|B|y\n3|C|z\n"),
 "empty_data": dict(data=""),
 "rating_half": dict(data="1\t1\t4.5\t100\n2\t2\t3\t100\n"),
 "rating_6": dict(data="1\t1\t6\t100\n2\t2\t3\t100\n"),
 "rating_nan": dict(data="1\t1\tnan\t100\n2\t2\t3\t100\n"),
 "rating_inf": dict(data="1\t1\tinf\t100\n2\t2\t3\t100\n"),
 "rating_hex": dict(data="1\t1\t0x4\t100\n2\t2\t3\t100\n"),
 "rating_1e0": dict(data="1\t1\t5e0\t100\n2\t2\t3\t100\n"),
 "rating_under": dict(data="1\t1\t4_0\t100\n2\t2\t3\t100\n"),
 "rating_spaces": dict(data="1\t1\t 5 \t100\n2\t2\t3\t100\n"),
 "rating_fullwidth": dict(data="1\t1\t\uff15\t100\n2\t2\t3\t100\n"),
 "rating_arabic": dict(data="1\t1\t\u0665\t100\n2\t2\t3\t100\n"),
 "neg_user": dict(data="-1\t1\t5\t100\n2\t2\t3\t100\n", user="-1|30|F|w|1\n2|40|M|o|2\n"),
 "user_pm0": dict(data="+0\t1\t5\t100\n-0\t2\t3\t100\n", user="0|30|F|w|1\n"),
 "extra_file": dict(extra={"u.data.bak": "junk", "ratings.dat": "1::1::5::1\n"}),
 "no_item": dict(item=None),
 "quoted": dict(data='"1"\t1\t5\t100\n2\t2\t3\t100\n'),
 "item_latin": dict(item="1|Caf\xe9|x\n2|B|y\n"),
 "trailing_blank_lines": dict(data="1\t1\t5\t100\n\n\n2\t2\t3\t100\n\n"),
 "ws_line": dict(data="1\t1\t5\t100\n   \n2\t2\t3\t100\n"),
 "ts_neg": dict(data="1\t1\t5\t-100\n1\t1\t1\t-200\n2\t2\t3\t100\n"),
 "zip_leading_zero": dict(user="1|30|F|w|01234\n2|40|M|o|2\n"),
 "gender_lower": dict(user="1|30|f|w|1\n2|40|M|o|2\n"),
 "age_big": dict(user="1|300000|F|w|1\n2|40|M|o|2\n"),
 "occupation_empty": dict(user="1|30|F||1\n2|40|M|o|2\n"),
}
for name, kw in cases.items():
    d = mk(name, **kw)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            R, users, titles = load_movielens_100k(d)
            print(name, "OK", R.toarray().tolist(), users.index.tolist(), users.to_dict("list") if name in ("zip_leading_zero","occupation_empty","age_big") else "", titles, [str(x.message)[:80] for x in w])
        except Exception as e:
            print(name, "ERR", type(e).__name__, str(e)[:200].replace("\n", " | "))
