"""Reading back a chart tunegate drew: the SVG parsed as XML, its marks by kind, its texts."""
from __future__ import annotations

import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


class Drawn:
    """A parsed SVG document (ElementTree raises on one that is not well-formed XML)."""

    def __init__(self, data: bytes):
        self.root = ET.fromstring(data)
        assert self.root.tag == f"{NS}svg"

    def marks(self, kind: str) -> list[ET.Element]:
        """Every element of `kind` (rect, line, polyline, circle, text), in drawing order."""
        return list(self.root.iter(f"{NS}{kind}"))

    def texts(self) -> list[str]:
        return [t.text or "" for t in self.marks("text")]

    def fills(self, kind: str) -> list[str]:
        return [m.get("fill", "") for m in self.marks(kind)]
