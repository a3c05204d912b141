"""The pages' baseline: a bare Flask app rendering a list of 30 rows and a
thread of 50 messages from memory with Jinja (autoescaped), as large as the
inbox's pages, with nothing behind it."""

from flask import Flask, render_template_string

app = Flask(__name__)

ROWS = [
    {"name": f"Contact {n}", "preview": "Do you deliver on Sundays? " * 3, "at": "12:0{n % 10}"}
    for n in range(30)
]
MESSAGES = [{"who": "customer" if n % 2 else "agent", "text": "A message. " * 8} for n in range(50)]
PAGE = """<!doctype html><html><head><title>{{ title }}</title></head><body><main><ol>
{% for row in rows %}<li><a href="/c/{{ loop.index }}"><b>{{ row.name }}</b>
<span>{{ row.preview }}</span><time>{{ row.at }}</time></a></li>{% endfor %}
</ol></main></body></html>"""


@app.get("/")
def listed():
    return render_template_string(PAGE, title="Inbox", rows=ROWS)


@app.get("/c")
def thread():
    rows = [{"name": m["who"], "preview": m["text"], "at": ""} for m in MESSAGES]
    return render_template_string(PAGE, title="Conversation", rows=rows)
