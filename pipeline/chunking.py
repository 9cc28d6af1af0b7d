"""Structure-aware chunking: headings, then paragraphs, then sentences, then words; merged to a target size.

Each chunk keeps its heading path. What is embedded and BM25-indexed is the contextualised text
(`Document: <title>\\nSection: <a > b>\\n\\n<chunk>`); what users see is the raw chunk text.
Chunk ids derive from the document id and the content, so reindexing unchanged text is a no-op.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from pipeline.text import FENCE, LIST_ITEM, MD_LINK, split_sentences, unescaped
from pipeline.types import Chunk, Document, content_hash

_CODE_START = re.compile(r"^(?:\s*(?:`{3,}|~{3,})|    |\t)")


def sections(text: str) -> list[tuple[tuple[str, ...], str]]:
    """Split Markdown-like text at headings: [(heading path, body text)], document order, empty bodies dropped."""
    lines = text.split("\n")
    tokens = MarkdownIt("commonmark").parse(text)
    heads = [(t.map[0], t.map[1], int(t.tag[1]), " ".join(plain_text(tokens[i + 1].content).split()))
             for i, t in enumerate(tokens) if t.type == "heading_open" and t.map]
    out: list[tuple[tuple[str, ...], str]] = []
    path: list[tuple[int, str]] = []
    body_start = 0
    for start, end, level, title in [*heads, (len(lines), len(lines), 0, "")]:
        body = "\n".join(lines[body_start:start]).strip()
        if body:
            out.append((tuple(t for _, t in path), body))
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        body_start = end
    return out


def plain_text(text: str, urls: bool = False) -> str:
    """Markdown inline markup reduced to its words, for matching: links to their text (with
    `urls`, "text (url)"), images dropped, code backticks and backslash escapes removed."""
    def link(m: re.Match) -> str:
        if m.group(0).startswith("!"):
            return ""
        return f"{m.group(1)} ({m.group(2)})" if urls and m.group(2) else m.group(1)

    return unescaped(MD_LINK.sub(link, text).replace("`", ""))


def _paragraphs(body: str) -> list[str]:
    """Blank-line separated paragraphs; a fenced code block is one paragraph, blank lines and all."""
    out: list[str] = []
    lines: list[str] = []
    fence = ""
    for line in body.split("\n"):
        match = FENCE.match(line)
        if fence:
            lines.append(line)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = ""
        elif match:
            fence = match.group(1)
            lines.append(line)
        elif line.strip():
            lines.append(line)
        elif lines:
            out.append("\n".join(lines))
            lines = []
    if lines:
        out.append("\n".join(lines))
    return out


def _code_pieces(block: str, size: int) -> list[str]:
    """A fenced code block over `size` as several fenced blocks of whole lines (a line longer
    than a chunk is cut)."""
    lines = block.split("\n")
    opening = lines[0].strip()
    closing = lines[-1].strip() if len(lines) > 1 and FENCE.match(lines[-1]) else FENCE.match(opening).group(1)
    inner = lines[1:-1] if len(lines) > 1 and FENCE.match(lines[-1]) else lines[1:]
    room = max(size - len(opening) - len(closing) - 2, 10)
    groups: list[list[str]] = [[]]
    for part in (cut for line in inner for cut in (line[i:i + room] for i in range(0, max(len(line), 1), room))):
        if groups[-1] and len("\n".join([*groups[-1], part])) > room:
            groups.append([])
        groups[-1].append(part)
    return [f"{opening}\n" + "\n".join(g) + f"\n{closing}" for g in groups if g]


def _pieces(body: str, size: int) -> list[str]:
    """Paragraphs; those over `size` become list items, sentences, then word runs (a code block
    becomes smaller code blocks)."""
    out: list[str] = []
    for para in _paragraphs(body):
        para = para.strip()
        if not para:
            continue
        if len(para) <= size:
            out.append(para)
            continue
        if FENCE.match(para) and 2 * len(para.split("\n", 1)[0]) + 20 < size:
            out += _code_pieces(para, size)
            continue
        lines = para.split("\n")
        if not _CODE_START.match(para) and sum(bool(LIST_ITEM.match(x)) for x in lines) > 1:
            items: list[str] = []  # a long list: one piece per item (with its wrapped lines)
            for line in lines:
                if LIST_ITEM.match(line) or not items:
                    items.append(line)
                else:
                    items[-1] += "\n" + line
            out += _pieces("\n\n".join(items), size) if len(items) > 1 else [para]
            continue
        for sentence in split_sentences(para):
            if len(sentence) <= size:
                out.append(sentence)
                continue
            run = ""
            for word in sentence.split():
                for part in (word[i : i + size] for i in range(0, len(word), size)):  # a huge "word" (URL) is cut, not lost
                    if run and len(run) + 1 + len(part) > size:
                        out.append(run)
                        run = ""
                    run = f"{run} {part}" if run else part
            if run:
                out.append(run)
    return out


def _tail(text: str, overlap: int) -> str:
    """The last whole sentences of `text`'s last paragraph that fit in `overlap` characters ("" when
    even its last sentence is longer, or the paragraph is code or a table): overlap never starts a
    chunk mid-sentence."""
    if overlap <= 0:
        return ""
    last = text.rsplit("\n\n", 1)[-1]
    if _CODE_START.match(last) or last.lstrip().startswith("|") or "```" in last:
        return ""
    tail = ""
    for sentence in reversed(split_sentences(last)):
        joined = f"{sentence} {tail}" if tail else sentence
        if len(joined) > overlap:
            break
        tail = joined
    return tail


def merge(pieces: list[str], size: int, overlap: int) -> list[str]:
    """Greedily join pieces up to `size`; each new chunk starts with the tail (≤ `overlap`) of the previous one."""
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + 2 + len(piece) > size:
            chunks.append(current)
            tail = _tail(current, overlap)
            current = f"{tail}\n\n{piece}" if tail and len(tail) + 2 + len(piece) <= size else piece
        else:
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        chunks.append(current)
    return chunks


def context_text(title: str, headings: tuple[str, ...], text: str) -> str:
    """The text that is embedded and BM25-indexed for a chunk."""
    head = f"Document: {title}\n"
    if headings:
        head += f"Section: {' > '.join(headings)}\n"
    return f"{head}\n{plain_text(text, urls=True)}"


def chunk_document(doc: Document, size: int = 800, overlap: int = 120) -> list[Chunk]:
    """Chunks of a document in reading order, each with its heading path and a content-derived id."""
    if size < 50 or not 0 <= overlap < size:
        raise ValueError(f"bad chunking parameters size={size}, overlap={overlap}")
    chunks: list[Chunk] = []
    for headings, body in sections(doc.text):
        # a heading path that only repeats the title adds nothing to the context line
        shown = headings[1:] if headings and headings[0] == doc.title else headings
        for text in merge(_pieces(body, size), size, overlap):
            ctx = context_text(doc.title, shown, text)
            chunks.append(Chunk(
                id=content_hash(f"{doc.id}\n{len(chunks)}\n{ctx}"), doc_id=doc.id, text=text, context_text=ctx,
                title=doc.title, headings=headings, source=doc.source, domain=doc.domain, url=doc.url,
                path=doc.path, position=len(chunks), doc_hash=doc.hash, modified=doc.modified,
            ))
    return chunks
