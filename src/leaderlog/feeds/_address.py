"""Web addresses from stored data, made safe to link to without dropping valid ones.

The write path accepts any ``http(s)://`` address without white space, so a stored source
address may hold characters an address cannot carry as they are: ``"<>\\^`{|}``, brackets
outside an IPv6 host, a ``%`` that starts no escape, a second ``#``, control characters, or
letters outside ASCII. Rather than refusing such an address, each of those characters is
percent-encoded (as UTF-8), which is what a browser sends for it anyway; what is already
valid — reserved characters, existing escapes — is left exactly as it was.

Two forms are made:

- :func:`web_address`, an IRI (RFC 3987): letters outside ASCII stay readable. It is what
  people read (the address in a summary).
- :func:`web_uri`, a URI (RFC 3986): the host name in IDNA (``xn--``) form, every other
  character outside ASCII percent-encoded. Every link is one, feed links and the ``href`` in
  HTML content alike (a browser of another IDNA generation would resolve some IRI hosts
  elsewhere, ``straße.de`` as ``strasse.de``): RSS and JSON Feed ask for
  URIs, and though Atom allows IRIs, validators and readers handle URIs more reliably (the
  W3C validator rejects an IRI whose path holds more than 63 characters past the last dot).

Anything but ``http`` and ``https`` is refused (``javascript:``, ``data:``...), as is an address
whose authority is not a host and port (an unbalanced bracket, a port that is not a number up
to 65535). A user name and password before the host are left out of both forms, and a host
that could pass for another (``paypal.com`` with a Cyrillic ``a``, U+0430) is read in its ``xn--``
form.
"""

from __future__ import annotations

import ipaddress
import re
import string
import unicodedata

import idna

__all__ = [
    "host_and_port",
    "is_web_address",
    "uri",
    "web_address",
    "web_uri",
    "with_lowercase_scheme",
]

ADDRESS_LIMIT = 2000
_SHAPE = re.compile(r"^(https?)://([^/?#]*)(.*)$", re.DOTALL)
_WHITE_SPACE = re.compile(r"\s")
_HEX = frozenset(string.hexdigits)
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_SUB_DELIMS = frozenset("!$&'()*+,;=")
_HOST = _UNRESERVED | _SUB_DELIMS
_PATH = _UNRESERVED | _SUB_DELIMS | {":", "@", "/"}
_QUERY = _PATH | {"?"}


def _iri_letter(code: int, in_query: bool) -> bool:
    """Whether a character outside ASCII may stand as it is in an IRI (RFC 3987 ``ucschar``,
    ``iprivate`` in the query only); bidirectional formatting characters may not (4.1)."""
    if code < 0xA0 or 0xD800 <= code <= 0xDFFF:
        return False
    if code in (0x200E, 0x200F) or 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        return False
    if (code & 0xFFFF) >= 0xFFFE or 0xFDD0 <= code <= 0xFDEF or 0xFFF0 <= code <= 0xFFFF:
        return False
    if 0xE000 <= code <= 0xF8FF or code >= 0xF0000:
        return in_query
    return True


def _escape(part: str, allowed: frozenset[str], iri: bool, in_query: bool = False) -> str:
    out: list[str] = []
    for index, char in enumerate(part):
        if char in allowed:
            out.append(char)
        elif char == "%" and len(part) > index + 2 and set(part[index + 1 : index + 3]) <= _HEX:
            out.append(char)  # an escape already: kept as it is
        elif iri and _iri_letter(ord(char), in_query):
            out.append(char)
        else:
            out.append("".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass")))
    return "".join(out)


def _ascii_host(host: str) -> str:
    """A host name in IDNA form, label by label; a label IDNA refuses is percent-encoded."""
    labels = []
    for label in host.split("."):
        if label.isascii():
            labels.append(label)
            continue
        try:
            # IDNA 2008 with UTS #46 mapping, as browsers resolve it: Python's own "idna"
            # codec is IDNA 2003, which would link straße.de as another domain, strasse.de.
            labels.append(idna.encode(label, uts46=True).decode("ascii"))
        except UnicodeError:
            labels.append(_escape(label, _HOST, iri=False))
    return ".".join(labels)


# Scripts a label may mix, as people write them (Japanese, Chinese, Korean with Latin);
# any other mix is how a lookalike host is made ("paypal" with a Cyrillic "a", U+0430).
_SCRIPT_MIXES = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)
# Letters of a script that pass for Latin ones: a label made of them alone ("apple" spelt
# in Cyrillic, U+0430 U+0440 U+0440 U+04CF U+0435) reads as a Latin name it is not.
_LATIN_LOOKALIKES = {
    "CYRILLIC": frozenset(
        "\u0430\u0501\u0435\u04bb\u0456\u0458\u04cf\u043e\u0440\u051b\u0455"
        "\u051d\u0445\u0443\u04af\u0475\u0461\u043f\u0433\u0441\u044a"
    ),
    "GREEK": frozenset("\u03b1\u03b9\u03ba\u03bd\u03bf\u03c1\u03c4\u03c5\u03c7"),
}
# Top-level domains whose readers expect Cyrillic names (as browsers judge it), besides
# those written in a script of their own.
_CYRILLIC_DOMAINS = frozenset({"bg", "by", "kz", "mk", "mn", "ru", "su", "ua", "uz", "rs", "kg"})


# Names whose first word is not a script: ideographs, their iteration mark (人々), and the
# prolonged sound mark (コーヒー), which Hiragana and Katakana share.
_SCRIPT_OF_NAME: dict[str, str | None] = {
    "CJK": "HAN",
    "IDEOGRAPHIC": "HAN",
    "KATAKANA-HIRAGANA": None,
}


def _script(character: str) -> str | None:
    """The script of a letter, as the first word of its Unicode name tells it (LATIN,
    CYRILLIC, HAN...); None for what every script uses (digits, hyphens, marks)."""
    if not unicodedata.category(character).startswith("L"):
        return None
    words = unicodedata.name(character, "UNKNOWN").split()
    if words[0] in ("FULLWIDTH", "HALFWIDTH") and len(words) > 1:
        words = words[1:]
    return _SCRIPT_OF_NAME.get(words[0], words[0])


def _deceptive(host: str) -> bool:
    """Whether a host name written outside ASCII could pass for another, as browsers judge
    it before they show one in Unicode: a label mixing scripts that are not written
    together, or made only of Cyrillic or Greek letters that look Latin (outside the
    Cyrillic top-level domains). Such a host is shown in its ``xn--`` form."""
    labels = host.lower().rstrip(".").split(".")
    top = labels[-1]
    for label in labels:
        if label.isascii():
            continue
        scripts = {script for script in map(_script, label) if script is not None}
        if len(scripts) > 1 and not any(scripts <= mix for mix in _SCRIPT_MIXES):
            return True
        for script, lookalikes in _LATIN_LOOKALIKES.items():
            letters = {character for character in label if _script(character) == script}
            expected_there = not top.isascii() or (
                script == "CYRILLIC" and top in _CYRILLIC_DOMAINS
            )
            if scripts == {script} and letters <= lookalikes and not expected_there:
                return True
    return False


def _authority(authority: str, iri: bool) -> str | None:
    if "\\" in authority:
        # Browsers read a backslash as a slash, RFC 3986 as data: the host would depend on
        # who reads the address, so it is not linked at all.
        return None
    host_port = authority.rpartition("@")[2]
    if host_port.startswith("["):
        literal, bracket, after = host_port[1:].partition("]")
        if not bracket or not _ip_literal(literal) or after[:1] not in ("", ":"):
            return None
        host, colon, port = f"[{literal}]", after[:1], after[1:]
    else:
        name, colon, port = host_port.partition(":")
        if not name:
            return None
        host = _escape(name, _HOST, iri=True)
        if not iri or _deceptive(host):
            host = _ascii_host(host)
    if port and not (port.isascii() and port.isdigit() and int(port) <= 65535):
        return None  # browsers refuse a port out of range: no link, rather than a dead one
    # A user name or password is left out (RFC 9110, 4.2.4: never generated in an http(s)
    # reference): a feed would publish credentials, and "https://www.ice.gov@evil.example/"
    # would read as another site than the one it leads to.
    return f"{host}{colon}{port}"


def _ip_literal(literal: str) -> bool:
    if re.fullmatch(r"[vV][0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+", literal):
        return True  # IPvFuture
    percent = literal.find("%")
    if percent >= 0 and literal[percent : percent + 3] != "%25":
        # A zone id's "%" is written "%25" in an address (RFC 6874); a bare one could not
        # be linked as it is.
        return False
    try:
        ipaddress.IPv6Address(literal.replace("%25", "%", 1))
    except ValueError:
        return False
    return True


def _normalise(value: object, iri: bool) -> str | None:
    if not isinstance(value, str) or len(value) > ADDRESS_LIMIT or _WHITE_SPACE.search(value):
        return None
    shape = _SHAPE.match(value)
    if shape is None:
        return None
    scheme, authority, rest = shape.groups()
    host = _authority(authority, iri)
    if host is None:
        return None
    before_fragment, hash_mark, fragment = rest.partition("#")
    path, question_mark, query = before_fragment.partition("?")
    return (
        f"{scheme}://{host}{_escape(path, _PATH, iri)}"
        f"{question_mark}{_escape(query, _QUERY, iri, in_query=True)}"
        f"{hash_mark}{_escape(fragment, _QUERY, iri)}"
    )


def web_address(value: object) -> str | None:
    """The ``http(s)`` address as an IRI anyone can follow, or None when it is not one."""
    return _normalise(value, iri=True)


def web_uri(value: object) -> str | None:
    """The ``http(s)`` address as a URI (IDNA host, UTF-8 escapes), or None."""
    return _normalise(value, iri=False)


def uri(address: str) -> str:
    """An address made by this package (a feed's own, or a :func:`web_address`) as a URI."""
    return web_uri(address) or address


def host_and_port(host: str, port: int) -> str:
    """``host:port`` as written in a URL: an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_web_address(value: object) -> bool:
    """Whether ``value`` is an ``http(s)`` address that can be used exactly as it is."""
    return value is not None and web_address(value) == value


def with_lowercase_scheme(address: str) -> str:
    """``address`` with its scheme in lower case, as links carry it: a scheme is
    case-insensitive (RFC 3986, 3.1), so ``HTTPS://example.org`` is given as well."""
    scheme, separator, rest = address.partition("://")
    return f"{scheme.lower()}{separator}{rest}" if separator else address
