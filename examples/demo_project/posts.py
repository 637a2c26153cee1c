"""A tiny blog backend: the demo asks the agent to add pagination here."""

POSTS = [{"id": n, "title": f"Post {n}"} for n in range(1, 51)]


def list_posts(posts):
    return posts


if __name__ == "__main__":
    for post in list_posts(POSTS):
        print(post["id"], post["title"])
