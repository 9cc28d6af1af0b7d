"""Structure-aware chunking: headings, then paragraphs, then sentences, then words; merged to a target size.

Each chunk keeps its heading path. What is embedded and BM25-indexed is the contextualised text
(`Document: <title>\\nSection: <a > b>\\n\\n<chunk>`); what users see is the raw chunk text.
Chunk ids derive from the document id and the content, so reindexing unchanged text is a no-op.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from pipeline.types import Chunk, Document, content_hash

_SENTENCE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def sections(text: str) -> list[tuple[tuple[str, ...], str]]:
    """Split Markdown-like text at headings: [(heading path, body text)], document order, empty bodies dropped."""
    lines = text.split("\n")
    tokens = MarkdownIt("commonmark").parse(text)
    heads = [(t.map[0], t.map[1], int(t.tag[1]), tokens[i + 1].content.strip())
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


def split_sentences(text: str) -> list[str]:
    """A fast rule-based sentence split (chunking needs no linguistic precision)."""
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _pieces(body: str, size: int) -> list[str]:
    """Paragraphs; those over `size` become sentences; sentences over `size` become word runs."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", body):
        para = para.strip()
        if not para:
            continue
        if len(para) <= size:
            out.append(para)
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
    """The last ≤ `overlap` characters of `text`, starting at a word boundary."""
    if overlap <= 0 or len(text) <= overlap:
        return text if overlap > 0 else ""
    cut = text[-overlap:]
    space = cut.find(" ")
    return cut[space + 1 :] if space >= 0 else cut


def merge(pieces: list[str], size: int, overlap: int) -> list[str]:
    """Greedily join pieces up to `size`; each new chunk starts with the tail (≤ `overlap`) of the previous one."""
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + 2 + len(piece) > size:
            chunks.append(current)
            tail = _tail(current, overlap)
            current = f"{tail} {piece}" if tail and len(tail) + 1 + len(piece) <= size else piece
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
    return f"{head}\n{text}"


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
