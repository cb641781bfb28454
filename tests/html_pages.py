"""A test helper: an HTML page read as a browser would (tags, links, embedded images, table cells)."""

import html.parser


class HTMLPage(html.parser.HTMLParser):
    """``tags`` (in order), ``imgs`` (attributes of each ``<img>``), ``refs`` ((tag, attribute, value) of every
    reference but an image's ``src``), ``tables`` (rows of cells, per table) and ``cells`` (every cell, in order)."""

    def __init__(self, page=None):
        super().__init__(convert_charrefs=True)
        self.tags, self.imgs, self.tables, self.refs, self.cells = [], [], [], [], []
        self._cell, self._row = None, None
        if page is not None:
            self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == "img":
            self.imgs.append(attrs)
        for key in ("src", "href", "action", "data", "poster"):
            if key in attrs and not (tag == "img" and key == "src"):
                self.refs.append((tag, key, attrs[key]))
        if tag == "table":
            self.tables.append([])
        if tag == "tr":
            self._row = []
        if tag in ("td", "th"):
            self._cell = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.cells.append(self._cell)
            if self._row is not None:
                self._row.append(self._cell)
            self._cell = None
        if tag == "tr" and self.tables:
            self.tables[-1].append(self._row)

    @property
    def hrefs(self):
        """Every link or source the page would load or follow, but its embedded PNG plots."""
        return [v for _, _, v in self.refs] + [i["src"] for i in self.imgs
                                               if not i.get("src", "").startswith("data:image/png")]
