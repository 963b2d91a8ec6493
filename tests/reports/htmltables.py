"""Extracts the tables of a report as lists of {header text: cell text} dicts.

Why: checking that "3.80×" sits in the cuda-ddp ×4 row under the "speedup vs
cuda" header is a much stronger test than finding the string somewhere.
"""

from html.parser import HTMLParser


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self._rows, self._row, self._cell = [], None, None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._rows = []
        elif tag == "tr" and self._rows is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self._rows.append(self._row)
            self._row = None
        elif tag == "table" and self._rows is not None:
            head, *body = self._rows
            self.tables.append([dict(zip(head, r)) for r in body])
            self._rows = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables(html):
    p = _Tables()
    p.feed(html)
    return p.tables


def find_rows(html, **match):
    """Rows of any table whose cells equal every header=value in match (keys with _ for spaces)."""
    want = {k.replace("_", " "): str(v) for k, v in match.items()}
    return [r for t in tables(html) for r in t
            if all(r.get(k) == v for k, v in want.items())]


def cell(row, header_prefix):
    """The value of the first column whose header starts with header_prefix."""
    for k, v in row.items():
        if k.startswith(header_prefix):
            return v
    raise KeyError(f"no column starting with {header_prefix!r} in {list(row)}")


def section(html, section_id):
    """The body of the report's <section id="section_id"> (up to its </section>)."""
    return html.split(f'<section id="{section_id}">', 1)[1].split("</section>", 1)[0]


def report_section(folder, section_id):
    """section() of FOLDER/report.html."""
    with open(f"{folder}/report.html", encoding="utf-8") as f:
        return section(f.read(), section_id)
