"""Finding section headings in a paper's text lines (PDF text, plain text or Markdown).

Papers number their headings in many ways (``3 Approach``, ``3. Approach``, ``III. Approach``,
``A Appendix``) or not at all (``RELATED WORK``), and IEEE papers start the abstract inline
(``Abstract—We propose...``). PDF text also holds lines that look like headings and are not
(``1. Since a single...`` in running text, table rows, years in the references): a
:class:`HeadingScanner` reads a document's lines in order and accepts a numbered heading only
when its number follows the previous one, which removes most of those."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from itertools import pairwise

from sagagraph.storable_text import replace_surrogates

_ENGLISH = """abstract|summary|introduction|overview|motivation|background|related work|
related works|prior work|previous work|literature review|preliminaries|method|methods|
methodology|materials and methods|approach|experiments|experimental setup|evaluation|results|
discussion|limitations|future work|conclusion|conclusions|concluding remarks|
conclusion and future work|conclusions and future work|discussion and conclusion|
experimental results|experimental evaluation|experimental setup and results|
results and discussion|methods and materials|material and methods|patients and methods|
subjects and methods|outlook|conclusion and outlook|conclusions and outlook|
summary and outlook|discussion and outlook|perspectives|clinical perspectives|
discussion and conclusions|summary and conclusions|acknowledgments|acknowledgements|
acknowledgment|acknowledgement|references|bibliography|works cited|literature cited|appendix|
appendices|keywords|index terms|ccs concepts|ethics statement|ethical considerations|
broader impact|broader impact statement|data availability|code availability|
author contributions|funding|competing interests"""
# Other languages, written as normalize_title leaves them (lower case, no accents).
_FRENCH = """resume|introduction|etat de l'art|travaux connexes|travaux anterieurs|methode|
methodologie|approche|methode proposee|experiences|experimentations|evaluation|resultats|
discussion|conclusion|conclusions|conclusion et perspectives|perspectives|travaux futurs|
discussion et perspectives|bilan et perspectives|remerciements|
references|references bibliographiques|bibliographie|annexe"""
_GERMAN = """zusammenfassung|kurzfassung|einleitung|einfuhrung|hintergrund|grundlagen|
verwandte arbeiten|stand der forschung|methode|methoden|methodik|ansatz|experimente|
evaluation|evaluierung|ergebnisse|diskussion|fazit|schluss|schlussfolgerung|
schlussfolgerungen|fazit und ausblick|zusammenfassung und ausblick|ausblick|danksagung|
literatur|literaturverzeichnis|quellen|anhang"""
_SPANISH = """resumen|introduccion|antecedentes|trabajo relacionado|trabajos relacionados|
estado del arte|metodo|metodologia|enfoque|experimentos|evaluacion|resultados|discusion|
conclusion|conclusiones|trabajo futuro|trabajos futuros|perspectivas|
conclusiones y trabajo futuro|agradecimientos|referencias|bibliografia|apendice"""
_PORTUGUESE = """resumo|introducao|fundamentacao teorica|trabalhos relacionados|metodo|
metodologia|abordagem|experimentos|avaliacao|resultados|discussao|conclusao|conclusoes|
consideracoes finais|trabalhos futuros|agradecimentos|referencias|bibliografia|apendice"""
_ITALIAN = """sommario|riassunto|introduzione|lavori correlati|stato dell'arte|metodo|
metodologia|approccio|esperimenti|valutazione|risultati|discussione|conclusione|conclusioni|
sviluppi futuri|ringraziamenti|riferimenti|riferimenti bibliografici|bibliografia|appendice"""


def _vocabulary(*lists: str) -> frozenset[str]:
    return frozenset(w.strip() for words in lists for w in words.split("|") if w.strip())


KNOWN_HEADINGS = _vocabulary(_ENGLISH, _FRENCH, _GERMAN, _SPANISH, _PORTUGUESE, _ITALIAN)
"""Headings recognised without a number, compared after :func:`normalize_title`."""
_SPACELESS = {k.replace(" ", ""): k for k in KNOWN_HEADINGS}
"""Known headings without their spaces: a letter-spaced ``R E S U L T S`` or a font that runs
words together (``RELATEDWORK``) still names one."""


def known_heading(title: str) -> str | None:
    """The known heading ``title`` names (normalised), also when its spacing is broken."""
    name = normalize_title(title)
    if name in KNOWN_HEADINGS:
        return name
    spaceless = name.replace(" ", "")
    # Spacing is only trusted to be broken when it visibly is: single letters, or no space.
    if spaceless in _SPACELESS and (" " not in name or max(map(len, name.split())) <= 2):
        return _SPACELESS[spaceless]
    return None


_FUNCTION_WORDS = frozenset(
    {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "the"}
    | {"to", "via", "with", "&", "-"}
)
# A font that runs words together prints "1.Introduction" and "II.RELATED WORK": a capital
# right after the number's full stop still starts a title.
_NUMBERED = re.compile(
    r"^(?P<num>\d{1,2}(?:\.\d{1,2}){0,3})(?:\.?\s+|\.(?=[A-Z][A-Za-z]))(?P<title>\S.*)$"
)
# Letter-spaced numerals ("I I I. SOLUTION") are numerals too.
_ROMAN = re.compile(r"^(?P<num>[IVX](?: ?[IVX]){0,5})\.(?:\s+|(?=[A-Z][A-Za-z]))(?P<title>\S.*)$")
_LETTER = re.compile(r"^(?P<num>[A-H])(?:\.\d{1,2})*\.?\s+(?P<title>\S.*)$")
_CHAPTER = re.compile(
    r"^(?:chapter|chapitre|kapitel|cap[ií]tulo|capitolo)\s+(?P<num>\d{1,2}|[IVX]{1,6})[.:]?"
    r"(?:\s+(?P<title>\S.*))?$",
    re.IGNORECASE,
)
_APPENDIX = re.compile(r"^appendix(?:\s+[A-H0-9]+)?\s*[:.\-—–]?\s*\S.*$", re.IGNORECASE)
_RUN_IN = (
    r"abstract|summary|r[ée]sum[ée]|zusammenfassung|kurzfassung|resumen|resumo|sommario|"
    r"riassunto|keywords|key words|index terms|mots[- ]cl[ée]s|schl[üu]sselw[öo]rter"
)
_INLINE = re.compile(rf"^(?P<name>{_RUN_IN})\s*[—–:.\-]+\s*(?P<rest>\S.*)$", re.IGNORECASE)
# All capitals need no punctuation: "ABSTRACT We propose ..." and "METHODS Patients were..."
# are run-in headings (two-column medical layouts); the name must be a known heading.
_INLINE_CAPS = re.compile(r"^(?P<name>ABSTRACT|SUMMARY|R[ÉE]SUM[ÉE])\s+(?P<rest>[A-Z].*)$")
_RUN_IN_CAPS = re.compile(
    r"^(?P<name>[A-ZÀ-Ý][A-ZÀ-Ý'’&\- ]{2,58}?)\s+(?P<rest>[A-ZÀ-Ý][a-zà-ÿ]+\b.*)$"
)
_INLINE_THANKS = re.compile(
    r"^(?P<name>acknowledge?ments?)[.:]?\s+(?P<rest>(?:We|This|The|Thanks|I|Our)\b.*)$",
    re.IGNORECASE,
)
_SENTENCE_BREAK = re.compile(r"[a-z)][.!?]\s+[A-Z]")
_MARKDOWN = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<title>.*?)\s*#*\s*$")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10}
_SPACING_ACCENTS = {"´": "\u0301", "¨": "\u0308", "ˆ": "\u0302", "˜": "\u0303"}
# TeX prints the accent apart, sometimes after a space as well: "INTRODUCCI ´ON".
_DETACHED_ACCENT = re.compile(r"(?:(?<=[A-Za-z])\s)?([´¨ˆ˜])\s?([A-Za-z])")
_GLUED = re.compile(r"[a-z)\]][A-Z]|\d\)|\(\d")
_CAPTION = re.compile(r"^(table|figure|fig\.|algorithm|tableau|tabelle|abbildung|tabla)\b", re.I)
_ARTEFACTS = str.maketrans({"\u00ad": None, "\u200b": None, "\ufeff": None, "\u2010": "-"})


_CONTROLS = str.maketrans(dict.fromkeys([*range(0x00, 0x09), *range(0x0E, 0x1C), 0x7F]))
"""Control characters that are not whitespace (``str.split`` folds the others): a broken font
map's NULs and escapes, never text."""


def normalize_line(line: str) -> str:
    """One PDF text line cleaned: ligatures (``ﬁ`` -> ``fi``, by NFKC), accents that TeX
    prints apart (``R´esum´e`` -> ``Résumé``), soft hyphens and zero-width marks dropped,
    control characters dropped, a lone surrogate (half a character from a broken font map,
    which no UTF-8 text, file or model request can carry) shown as U+FFFD, spaces folded."""
    if line.isascii():  # nothing to translate or compose: every pattern above is non-ASCII
        if not line.isprintable():  # a tab, a NUL...
            line = line.translate(_CONTROLS)
        return " ".join(line.split())
    line = _DETACHED_ACCENT.sub(lambda m: m.group(2) + _SPACING_ACCENTS[m.group(1)], line)
    line = unicodedata.normalize("NFKC", line.translate(_ARTEFACTS))
    if not line.isprintable():
        line = replace_surrogates(line.translate(_CONTROLS))
    return " ".join(line.split())


def normalize_title(title: str) -> str:
    """Lower case, accents removed, trailing punctuation dropped: ``Résumé:`` -> ``resume``."""
    if title.isascii():  # the common case, and this runs for every line of a paper
        plain = title
    else:
        decomposed = unicodedata.normalize("NFKD", title)
        plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(plain.lower().strip(" .:;—–-").split())


def roman_value(numeral: str) -> int:
    """Value of a Roman numeral made of I, V and X (``IV`` -> 4)."""
    total = 0
    for i, ch in enumerate(numeral):
        value = _ROMAN_VALUES[ch]
        following = _ROMAN_VALUES[numeral[i + 1]] if i + 1 < len(numeral) else 0
        total += -value if value < following else value
    return total


@dataclass(frozen=True)
class Heading:
    """A heading accepted by the scanner."""

    heading: str
    """The heading as printed, whitespace folded (``3 Approach``)."""
    title: str
    """The heading without its number (``Approach``)."""
    level: int
    """1 for a section, 2 for a subsection, and so on."""
    rest: str = ""
    """Text that followed an inline heading on the same line (``Abstract—We...``)."""
    lines: int = 1
    """Lines the heading took (2 when it wrapped)."""


def _looks_like_title(title: str, *, max_words: int = 14) -> bool:
    """True for a short, letter-heavy phrase that does not read like a sentence fragment."""
    words = title.split()
    if not words or len(words) > max_words or len(title) > 110:
        return False
    if not (title[0].isalpha() or title[0] in "\"'“("):
        return False
    if words[0] in ("We", "I", "It") and len(words) > 2:  # "1. We propose ...": a list item
        return False
    first = next((c for c in title if c.isalpha()), "")
    # A title may open on a Greek symbol ("ε-iDP for Numerical Queries"): then a capital
    # further on stands for the capital first letter.
    greek = "\u0370" <= first <= "\u03ff"
    if not (first.isupper() or (greek and any(w[:1].isupper() for w in words[1:]))):
        return False
    lowered = title.lower()
    if title.endswith((".", ",", ";", "-")) or "@" in title or "http" in lowered:
        return False
    if "www." in lowered or ".org" in lowered or ".com" in lowered:
        return False
    if _SENTENCE_BREAK.search(title.replace("e.g.", "eg").replace("vs.", "vs")):
        return False
    if sum(w.replace(".", "", 1).replace(",", "").isdigit() for w in words) > 1:
        return False
    if any(len(w) >= RUN_TOGETHER for w in words):  # "Forthisproblemwehaveused..."
        return False
    visible = [c for c in title if not c.isspace()]
    letters = sum(c.isalpha() for c in visible)
    return letters >= 0.6 * len(visible) and not is_debris(title)


_DEBRIS_MARKS = re.compile(r"[/\\|]\.|\.[/\\|]|[{}^~]")


def is_debris(title: str) -> bool:
    """True for a "title" no author writes: no word of two letters or more (``E``), several
    stray letters (``I I I/. SOLUTION``), or marks that only broken text layers print."""
    words = [w for w in re.split(r"[^\w]+", title) if w]
    if not any(sum(c.isalpha() for c in w) >= 2 for w in words):
        return True
    tokens = title.split()
    stray = any(
        len(a) == 1 and a.isalpha() and b[:1].isalpha() and len(b.rstrip("/.")) == 1
        for a, b in pairwise(tokens)
    )
    return stray or bool(_DEBRIS_MARKS.search(title))


_REFERENCE_NAMES = frozenset(
    {"references", "bibliography", "works cited", "literature cited", "referencias"}
    | {"bibliografia", "bibliographie", "references bibliographiques", "literatur"}
    | {"literaturverzeichnis", "riferimenti", "riferimenti bibliografici"}
)
_CITATION = re.compile(r",|\b(?:1[6-9]|20)\d\d[a-z]?\b")
"""What a reference entry has and a heading rarely does: a comma between authors, a year."""
_FRONT_HEADINGS = frozenset(
    {"abstract", "introduction", "resume", "zusammenfassung", "einleitung", "resumen"}
    | {"introduccion", "resumo", "introducao", "sommario", "introduzione", "riassunto"}
)
_OPENING_HEADINGS = frozenset(
    {"introduction", "einleitung", "introduccion", "introducao", "introduzione"}
)
RUN_TOGETHER = 35
"""A "word" this long is words a font printed without spaces: never part of a heading."""


def _is_caps(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and all(c.isupper() for c in letters)


def _continuation(title: str, next_line: str | None) -> str | None:
    """The next line when the heading visibly wrapped onto it, else None."""
    if not next_line:
        return None
    words = next_line.split()
    if not words or len(words) > 8 or next_line.endswith((".", ",", ";", ":")):
        return None
    last = title.split()[-1].lower()
    if last in _FUNCTION_WORDS or title.endswith(("-", ":")):
        return next_line
    if _is_caps(title) and _is_caps(next_line) and len(words) <= 5:
        return next_line
    return None


@dataclass
class HeadingScanner:
    """Accepts headings line by line, keeping the numbering seen so far."""

    markdown: bool = False
    """True for Markdown input: only ``#`` lines are headings."""
    _top: int = 0
    _sub: tuple[int, ...] = ()
    _scheme: str = ""
    _letter: int = 0
    _seen: set[str] = field(default_factory=set)
    _vouched: bool = False
    _unnumbered: bool = False
    """The introduction came unnumbered: a numbered line is then a list item unless the
    layout sets it apart."""

    def scan(
        self, line: str, next_line: str | None = None, *, emphasized: bool = False
    ) -> Heading | None:
        """The heading ``line`` starts, or None. ``next_line`` lets a wrapped heading join.

        ``emphasized`` says the layout set the line larger or bolder than the body: then a
        heading needs no known word and no number in sequence.
        """
        if self.markdown:
            return self._markdown(line)
        if not line or len(line) > 160:
            return None
        self._vouched = emphasized
        found = (
            self._inline(line)
            or self._known(line)
            or self._chapter(line, next_line)
            or self._numbered(line, next_line)
            or self._roman(line, next_line)
            or self._appendix(line, next_line)
            or self._emphasized(line)
        )
        if found is not None:
            self._seen.add(normalize_title(found.title))
        return found

    def _markdown(self, line: str) -> Heading | None:
        m = _MARKDOWN.match(line)
        if not m or not m.group("title"):
            return None
        title = m.group("title")
        level = len(m.group("hashes"))
        numbered = _NUMBERED.match(title)
        bare = numbered.group("title") if numbered else title
        return Heading(heading=title, title=bare, level=level)

    def _inline(self, line: str) -> Heading | None:
        m = _INLINE.match(line) or _INLINE_CAPS.match(line) or _INLINE_THANKS.match(line)
        if not m:
            m = _RUN_IN_CAPS.match(line)
            if not m or known_heading(m.group("name")) is None or len(m.group("rest")) < 20:
                return None
        name = m.group("name")
        if normalize_title(name) in self._seen:
            return None
        return Heading(heading=name, title=name, level=1, rest=m.group("rest"))

    def _known(self, line: str) -> Heading | None:
        # A heading starts with a capital: "methods." is the end of a sentence that wrapped.
        if len(line) > 60 or not line[:1].isupper():
            return None
        name = normalize_title(line)
        thanks = name.startswith("acknowledg") and len(name.split()) <= 4
        if known_heading(line) is None and not thanks:
            return None
        # An unnumbered heading after the appendices started (say "Summary") belongs to them.
        level = 2 if self._scheme == "letter" else 1
        known = known_heading(line)
        if (
            self._scheme == "arabic"
            and known in _FRONT_HEADINGS
            and not self._seen & KNOWN_HEADINGS
        ):
            # An unnumbered "Abstract" or "Introduction" after numbered lines: those were
            # affiliation marks ("1 University of Illinois", "2 Bloomberg"), not the outline.
            self._top, self._sub, self._scheme = 0, (), ""
        if not self._top and known in _OPENING_HEADINGS:
            self._unnumbered = True
        return Heading(heading=line.rstrip(":"), title=line.rstrip(":. "), level=level)

    def _wrapped(self, title: str, next_line: str | None) -> tuple[str, int]:
        extra = _continuation(title, next_line)
        return (f"{title} {extra}", 2) if extra else (title, 1)

    def _numbered(self, line: str, next_line: str | None) -> Heading | None:
        m = _NUMBERED.match(line)
        if not m or self._scheme in ("roman", "letter"):
            return None
        if self._unnumbered and not self._vouched:
            return None
        parts = tuple(int(p) for p in m.group("num").split("."))
        title, used = self._wrapped(m.group("title"), next_line)
        if self._seen & _REFERENCE_NAMES and _CITATION.search(title):
            return None  # "2. Geerts WH, Code KI: A prospective study" is an entry, not a section
        if not _looks_like_title(title) or not (
            self._follows(parts) or self._restarts(parts, title)
        ):
            return None
        self._accept(parts, "arabic")
        heading = line if used == 1 else f"{line} {next_line}"
        return Heading(heading=heading, title=title, level=len(parts), lines=used)

    def _chapter(self, line: str, next_line: str | None) -> Heading | None:
        """A thesis chapter: ``Chapter 2`` with its title on the same line or the next one."""
        m = _CHAPTER.match(line)
        if not m or self._scheme == "letter":
            return None
        num = m.group("num")
        value = int(num) if num.isdigit() else roman_value(num.upper())
        title, used = m.group("title"), 1
        if not title and next_line and _looks_like_title(next_line):
            title, used = next_line, 2
        if not title or not _looks_like_title(title) or not self._follows((value,)):
            return None
        self._accept((value,), "arabic")
        heading = f"{line} {title}" if used == 2 else line
        return Heading(heading=heading, title=title, level=1, lines=used)

    def _roman(self, line: str, next_line: str | None) -> Heading | None:
        m = _ROMAN.match(line)
        if not m or self._scheme in ("arabic", "letter"):
            return None
        title, used = self._wrapped(m.group("title"), next_line)
        value = roman_value(m.group("num").replace(" ", ""))
        if not _looks_like_title(title) or not (
            self._follows((value,)) or self._restarts((value,), title)
        ):
            return None
        self._accept((value,), "roman")
        heading = line if used == 1 else f"{line} {next_line}"
        return Heading(heading=heading, title=title, level=1, lines=used)

    def _appendix(self, line: str, next_line: str | None) -> Heading | None:
        """Appendix headings (``A Proofs``, ``Appendix B: Data``), only after the references."""
        if not self._seen & {"references", "bibliography", "works cited"}:
            return None
        if _APPENDIX.match(line) and _looks_like_title(line, max_words=12):
            return Heading(heading=line, title=line, level=1)
        m = _LETTER.match(line)
        if not m:
            return None
        letter = ord(m.group("num")) - ord("A") + 1
        if letter != self._letter + 1 or "." in line.split()[0][1:]:
            return None
        title, used = self._wrapped(m.group("title"), next_line)
        if not _looks_like_title(title, max_words=12):
            return None
        self._letter = letter
        self._scheme = "letter"
        heading = line if used == 1 else f"{line} {next_line}"
        return Heading(heading=heading, title=title, level=1, lines=used)

    def _restarts(self, parts: tuple[int, ...], title: str) -> bool:
        """A section 1 whose title is a known heading ("1 Introduction") or that the layout
        vouches for starts the numbering afresh: what came before (an affiliation numbered
        "1", a stray list) was not the paper's outline."""
        if parts[0] > 2 or len(parts) > 1:
            return False
        return self._vouched or normalize_title(title) in KNOWN_HEADINGS

    def _emphasized(self, line: str) -> Heading | None:
        """A line the layout sets apart, once the paper's first heading has been seen (the
        title and author block above it are set large too)."""
        if not self._vouched or not self._seen or _CAPTION.match(line):
            return None
        if not _looks_like_title(line, max_words=10) or line.endswith(":"):
            return None
        if _GLUED.search(line):  # text runs of a figure read as one line: "words)Summary"
            return None
        # In a numbered paper an unnumbered emphasized line is a paragraph heading.
        level = 2 if self._top else 1
        return Heading(heading=line, title=line, level=level)

    def _follows(self, parts: tuple[int, ...]) -> bool:
        """True when ``parts`` is a plausible next heading number after the last one seen."""
        top, rest = parts[0], parts[1:]
        if not rest:
            return self._top < top <= self._top + 2
        if top == self._top + 1:
            # The section heading itself was missed (it wrapped oddly): accept its first child.
            return all(p == 1 for p in rest)
        if top != self._top:
            return False
        depth = len(rest)
        if len(self._sub) < depth - 1 or rest[: depth - 1] != self._sub[: depth - 1]:
            return False
        before = self._sub[depth - 1] if len(self._sub) >= depth else 0
        return before < rest[-1] <= before + 2

    def _accept(self, parts: tuple[int, ...], scheme: str) -> None:
        self._top, self._sub, self._scheme = parts[0], parts[1:], scheme
