"""Checks for list_posts; run with `python3 test_posts.py`."""

from posts import POSTS, list_posts

first = list_posts(POSTS)
assert [p["id"] for p in first] == list(range(1, 21)), "page 1 holds posts 1-20"
second = list_posts(POSTS, page=2, page_size=20)
assert [p["id"] for p in second] == list(range(21, 41)), "page 2 holds posts 21-40"
assert list_posts(POSTS, page=9) == [], "a page past the end is empty"
print("ok: 3 checks passed")
