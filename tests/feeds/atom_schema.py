"""Validate Atom documents against RFC 4287 Appendix B: RELAX NG plus its Schematron rules.

lxml's RELAX NG ignores the Schematron assertions embedded in the schema (an author on the
feed or on every entry; an alternate link or content on every entry), so they are re-wrapped
as ISO Schematron, one pattern per rule so rules sharing a context all fire.
"""

from __future__ import annotations

import functools
from pathlib import Path

from lxml import etree, isoschematron

__all__ = ["atom_problems"]

RNG = Path(__file__).resolve().parent.parent / "data" / "atom.rng"
OLD_SCHEMATRON = "http://www.ascc.net/xml/schematron"
ISO_SCHEMATRON = "http://purl.oclc.org/dsdl/schematron"
ATOM = "http://www.w3.org/2005/Atom"
SVRL = "http://purl.oclc.org/dsdl/svrl"


@functools.cache
def _validators() -> tuple[etree.RelaxNG, isoschematron.Schematron]:
    schema = etree.parse(str(RNG))
    rules = etree.Element(f"{{{ISO_SCHEMATRON}}}schema", nsmap={"sch": ISO_SCHEMATRON})
    etree.SubElement(rules, f"{{{ISO_SCHEMATRON}}}ns", prefix="atom", uri=ATOM)
    found = 0
    for rule in schema.iter(f"{{{OLD_SCHEMATRON}}}rule"):
        pattern = etree.SubElement(rules, f"{{{ISO_SCHEMATRON}}}pattern")
        copied = etree.SubElement(pattern, f"{{{ISO_SCHEMATRON}}}rule", context=rule.get("context"))
        for check in rule:
            kind = etree.QName(check).localname
            element = etree.SubElement(
                copied, f"{{{ISO_SCHEMATRON}}}{kind}", test=check.get("test")
            )
            element.text = check.text
        found += 1
    assert found, "atom.rng carries no Schematron rules"
    return etree.RelaxNG(schema), isoschematron.Schematron(rules, store_report=True)


def atom_problems(document: bytes) -> list[str]:
    """Every RELAX NG error and failed Schematron assertion; empty when the document is valid."""
    relaxng, schematron = _validators()
    tree = etree.fromstring(document).getroottree()
    problems = []
    if not relaxng.validate(tree):
        problems += [f"RNG line {error.line}: {error.message}" for error in relaxng.error_log]
    if not schematron.validate(tree):
        for failed in schematron.validation_report.iter(f"{{{SVRL}}}failed-assert"):
            text = "".join(failed.itertext()).strip()
            problems.append(f"Schematron at {failed.get('location')}: {text}")
    return problems
