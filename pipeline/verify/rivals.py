"""Names in place: the name an evidence sentence has where a claim has another ("conducted in
Google Meet" / "in Microsoft Teams", "nodejs/build" / "nodejs/admin"), the class a reference section is
titled by, an option's default the source gives otherwise ("follow_symlink=False"), the code name
a source writes where a claim has a plain word ("the `console` pool" / "the interactive pool"), a
list with one item swapped, an example's option or output key given another value
("--invocation-type Event", "MemorySize": 128) or an option given the value another has there
("--alias GREEN" / "--qualifier GREEN"), and, for a name no document mentions, the one in the
sentence the claim restates or the one it misspells ("CARGO_NET_GIT_FETCH_WITH_CLI"). `rival_in_place`
tries them in turn. String rules over `pipeline.names` (the list rule also asks the cached parse
which words are nouns); no I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from difflib import SequenceMatcher

from pipeline import names as namelib
from pipeline.text import FUNCTION_WORDS, WORD, markdown_sentences, stem, words
from pipeline.verify.candidates import content_words

SWAP_CONTEXT = 5  # context score (same word right before and after: 2 each, +1 per shared word near) for a documented name


# A link's site, as `pipeline.text.link_text` writes it after the link's words: "KeePassXC (keepassxc.org)".
_SITE_NOTE = re.compile(r" \((?:www\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\)")


def rival_in_place(claim: str, invented: Sequence[str], sentence: str, evidence_index: int, about: Sequence[str],
                   candidates: Sequence[tuple[str, int, float]], passages: Sequence[str],
                   evidence: Sequence[str], cited: int = 0) -> tuple[str, str, tuple[str, int]]:
    """(the claim's name, the evidence's name in its place, and where that name is when not in the
    aligned `sentence`: (sentence, evidence index), else ("", -1)), or ("", "", ("", -1)). `about`: the
    aligned sentences the meaning checks read; `candidates`: all, as (text, evidence index, cosine);
    `passages`: their evidence texts; `cited`: how many of `evidence`, from the first, are the chunks the
    claim cites (a name they state is no swap); `invented`: the claim's names that no document mentions. Tried in
    turn: a name in place in an aligned sentence (`name_in_place`), one item of a list swapped, an
    example's value swapped; then, for an invented name, the sentence the claim restates but for it,
    its section's heading, and a name of the evidence it misspells."""
    nowhere = ("", -1)
    joined = " ".join(passages)
    stated = " ".join(dict.fromkeys([*passages, *evidence[:cited]]))  # a name the cited chunk states is no swap
    for text in about or [sentence]:
        name, rival = name_in_place(claim, stated, text)
        if rival and name not in invented and namelib.spelled_alike(name, rival):
            continue  # "follow_symlinks" where the claim's "follow_symlink" is a documented name too
        if rival and any(namelib.mentions(name, s) for s in about if s is not text):
            continue  # another aligned sentence states it: "send_json" beside "receive_json"
        if rival:  # the footnote quotes the sentence that has the other name
            return name, rival, (text, next(ei for t, ei, _ in candidates if t == text)) if text != sentence else nowhere
    name, rival = list_swapped(claim, about or [sentence])  # "git lfs and git subtree" / "'git lfs' and 'git annex'"
    if not rival:  # an example's option or output key with another value: "--invocation-type Event"
        name, rival = value_swapped(claim, joined)
    if rival or not invented:
        return name, rival, nowhere
    if restated := restated_around(claim, invented[0], candidates):
        # the sentence the claim restates but for its invented name: "TTS recommends Bitwarden, which is
        # open source and runs on …" / "We recommend using KeePassXC which is open source and runs on …"
        name, rival = name_in_place(claim, restated[0], restated[0])
        if rival and name == invented[0]:
            return name, rival, restated
    if 0 <= evidence_index < len(evidence) and (rival := heading_rival(invented[0], evidence[evidence_index], claim)):
        return invented[0], rival, nowhere  # the section's own name
    rival, pi = spelled_like(invented[0], evidence)  # a misspelling of a name the evidence has
    if rival:
        return invented[0], rival, (next((s for s in markdown_sentences(evidence[pi]) if namelib.mentions(rival, s)),
                                         evidence[pi]), pi)
    return "", "", nowhere


RESTATED_AROUND_SHARE = 0.6  # of the claim's other content words, that a sentence must hold to be the one it restates


def restated_around(claim: str, name: str, candidates: Sequence[tuple[str, int, float]]) -> tuple[str, int] | None:
    """The candidate sentence that holds most of the claim's content words other than `name` (a name no
    document mentions), when it holds RESTATED_AROUND_SHARE of them or more: (text, evidence index)."""
    words = content_words(claim) - content_words(name)
    if len(words) < 3:
        return None
    scored = [(len(words & content_words(text)), -k, text, ei) for k, (text, ei, _) in enumerate(candidates)]
    best = max(scored, default=None)
    return (best[2], best[3]) if best and best[0] >= RESTATED_AROUND_SHARE * len(words) else None


def name_in_place(claim: str, passage: str, sentence: str) -> tuple[str, str]:
    """(the claim's name, the evidence's name in its place) when a name of the claim is nowhere in the
    evidence `passage` and the aligned `sentence` has another name between the same words
    ("conducted in Microsoft Teams" / "conducted in Google Meet"), or an option's default the
    sentence gives otherwise ("defaults to True" / "follow_symlink=False"); ('', '') otherwise."""
    sentence = _SITE_NOTE.sub("", sentence)  # "KeePassXC (keepassxc.org) which …": the name, not its site
    default = _default_rival(claim, sentence)  # "defaults to True" where the source has "follow_symlink=False"
    if not default[1] and passage != sentence:
        default = _default_rival(claim, passage, fields_only=True)  # the section's "* Default: …" line
    if default[1]:
        return default
    # a name the evidence never has; or one it has elsewhere, when another stands in its very place
    # (SWAP_CONTEXT: "File an issue in the nodejs/admin repository" / "in the nodejs/build repository")
    claim_names = [n for n in namelib.names(claim) if not namelib.mentions(n.text, sentence)]
    elsewhere = {n.text for n in claim_names if namelib.mentions(n.text, passage)}
    if not claim_names:
        return _word_for_code(claim, sentence)
    rivals = [n for n in namelib.names(sentence) if not namelib.mentions(n.text, claim)]
    bools = [(b, m.start()) for m in re.finditer(r"\b(?:True|False)\b", sentence) for b in [m.group(0)]]
    best: tuple[int, str, str] = (0, "", "")
    for name in claim_names:
        left, right = _context(claim, name.start, name.start + len(name.text))
        for rival, start in ((r, at) for r in rivals for at in _occurrences(sentence, r)):
            if rival.kind != name.kind and not (rival.kind == "code" or name.kind == "code") \
                    or namelib.abbreviates(name.text, rival.text):
                continue  # another kind of name, or the same name written out ("GPL" / "General Public License")
            r_left, r_right = _context(sentence, start, start + len(rival.text))
            score = _context_score(left, right, r_left, r_right)
            if name.kind == rival.kind == "code" and _marks(name.text) == _marks(rival.text):
                # two code names of one make: their context by stem, articles left out ("also respects
                # the XDG_CONFIG_HOME" / "will also respect `XDG_CACHE_HOME`")
                score = max(score, _context_score(*_stems(claim, name.start, name.start + len(name.text)),
                                                  *_stems(sentence, start, start + len(rival.text))))
            if name.text in elsewhere and (score < SWAP_CONTEXT or _marks(name.text) != _marks(rival.text)):
                continue  # a documented name: only another of its make ("nodejs/build") in its very place
            if score >= 3 and score > best[0]:
                best = (score, name.text, rival.text)
    for word in re.findall(r"\b(?:True|False)\b", claim):
        if word not in sentence:
            left, right = _context(claim, claim.index(word), claim.index(word) + len(word))
            for b, start in bools:
                if b != word:
                    r_left, _ = _context(sentence, start, start + len(b))
                    if set(left[-2:]) & set(r_left[-2:]):
                        return word, b
    return (best[1], best[2]) if best[1] else _word_for_code(claim, sentence)


def _occurrences(text: str, name: namelib.Name) -> list[int]:
    """Where a proper name stands in `text`: its first place (as `pipeline.names` gives it) and every
    later one ("cannot be met with Google Meet - most … should be conducted in Google Meet"). A code
    name counts at its first place only: a keyword such as `async` recurs down a list of signatures."""
    if name.kind != "proper":
        return [name.start]
    later = [m.start() for m in re.finditer(rf"(?<![\w.-]){re.escape(name.text)}(?![\w-])", text) if m.start() > name.start]
    return [name.start, *later]


_TICKED = re.compile(r"`([^`\n]{1,60})`")


def _word_for_code(claim: str, sentence: str) -> tuple[str, str]:
    """(the claim's word, the sentence's code name) where the sentence writes a code name in backticks
    and the claim has, between the same words (two before, and one after or the clause's end; a
    content word among them), a plain word the sentence nowhere has: "places the command in the
    interactive pool" / "in the `console` `pool`", "severity and cvss, for example" / "`severity` and
    `cwe`."; for a code name of several words, in place of its last ("run the corepack prepare command" /
    "call the `corepack pack` command"). ('', '') otherwise."""
    found = list(WORD.finditer(claim))
    claim_words = [w.group(0).lower() for w in found]
    sentence_words = set(words(sentence))
    for m in _TICKED.finditer(sentence):
        code = m.group(1)
        leading = " ".join(words(code)[:-1])  # a code of several words: its last is the slot ("corepack pack")
        left = words(sentence[:m.start()] + " " + leading)[-2:]
        after = sentence[m.end():].replace("`", "")
        right = [] if _CLAUSE_END.match(after) else words(after)[:1]
        if len(left) < 2 or not (right or _CLAUSE_END.match(after)) \
                or all(w in FUNCTION_WORDS for w in [*left, *right]) or namelib.mentions(code, claim):
            continue
        code_stems = {stem(w) for w in words(code)}
        for i in range(2, len(claim_words)):
            word = claim_words[i]
            if right:
                follows = i + 1 < len(claim_words) and claim_words[i + 1] == right[0]
            else:
                follows = _CLAUSE_END.match(claim[found[i].end():]) is not None
            if follows and claim_words[i - 2:i] == left and word.isalpha() and word not in FUNCTION_WORDS \
                    and word not in _KIND_WORDS and word not in sentence_words and stem(word) not in code_stems:
                return found[i].group(0), code
    return "", ""


_CLAUSE_END = re.compile(r"\s*(?:[.;:,)]|$)")
# Words that name a code name's kind or state rather than another name: "the default is enabled" for
# "The default is `True`", "set it in the environment variable" for "in `PIP_CONFIG_FILE`".
_KIND_WORDS = frozenset(
    "enabled disabled on off true false yes no set unset empty none null default defaults value values "
    "variable variables option options flag flags setting settings config configuration file files "
    "folder folders directory directories path paths command commands argument arguments parameter "
    "parameters key keys name names field fields environment property properties attribute attributes "
    "function functions method methods class classes module modules package packages string number "
    "list object tool tools program script scripts".split())


def _marks(name: str) -> frozenset[str]:
    """The punctuation a name is made with: {"/"} for "nodejs/admin", {"-", "."} for "vY.x-staging"."""
    return frozenset(c for c in name if not c.isalnum() and not c.isspace())


SPELLED_LIKE_RATIO = 0.8  # difflib's ratio of two code names, lower-cased, for one to be a misspelling of the other
SPELLED_LIKE_PART = 0.6  # … and of the one word they differ in, when they differ in one


def spelled_like(name: str, passages: Sequence[str]) -> tuple[str, int]:
    """The code name of the `passages` that `name` (a code name no document mentions) misspells, with
    the index of the passage that has it; ("", -1) when none. Of the same make and at least
    SPELLED_LIKE_RATIO alike, it has the words of `name` and more ("CARGO_GIT_FETCH_WITH_CLI" /
    "CARGO_NET_GIT_FETCH_WITH_CLI"), or one word spelled otherwise ("tests/vg_runtest" /
    "tests/vg_regtest"); not another word in its place ("request.client.ip" / "request.client.port")."""
    if not any(c.isalnum() for c in name) or not _marks(name) and not any(c.isupper() for c in name[1:]):
        return "", -1  # a plain word is no code name
    best: tuple[float, str, int] = (SPELLED_LIKE_RATIO, "", -1)
    for pi, passage in enumerate(passages):
        for other in sorted({n.text for n in namelib.names(passage) if n.kind == "code"}):
            if _marks(other) != _marks(name) or namelib.spelled_alike(other, name) or not _misspelt(name, other):
                continue
            ratio = SequenceMatcher(None, name.lower(), other.lower()).ratio()
            if ratio > best[0] or (ratio == best[0] and not best[1]):
                best = (ratio, other, pi)
    return best[1], best[2]


def _misspelt(name: str, other: str) -> bool:
    """Whether `other` has every word of `name` and more, or differs from it in one word spelled alike."""
    mine, theirs = Counter(_parts(name)), Counter(_parts(other))
    if not mine - theirs:
        return bool(theirs - mine)
    lost, found = list((mine - theirs).elements()), list((theirs - mine).elements())
    return (len(lost) == len(found) == 1
            and SequenceMatcher(None, lost[0], found[0]).ratio() >= SPELLED_LIKE_PART)


def _parts(name: str) -> list[str]:
    """The words a code name is made of, lower-cased: ["cmake", "build", "type"] for "CMAKE_BUILD_TYPE"."""
    return [p for p in re.split(r"[\W_]+", name.lower()) if p]


def heading_rival(name: str, passage: str, claim: str) -> str:
    """The code name the passage's section heading gives where the claim has `name`, one no document
    mentions, of the same make: "TrustedHostMiddleware" for "AllowedHostsMiddleware" (CamelCase
    names sharing a part), when the heading's last level is the section the evidence sentence is
    in. '' when there is none. (A reference page's sections are titled by the class they describe.)"""
    head = passage.split("\n\n", 1)[0]
    if "\n" in head or len(head) > 200 or head == passage:
        return ""
    parts = set(_camel_parts(name))
    for rival in namelib.names(head.split(" > ")[-1]):
        if rival.kind == "code" and not namelib.mentions(rival.text, claim) and parts & set(_camel_parts(rival.text)):
            return rival.text
    return ""


def _camel_parts(name: str) -> list[str]:
    return [p.lower() for p in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name) if len(p) > 2]


# "the follow_symlink option defaults to True", "`samesite` defaults to 'lax'", "the init-license config,
# whose default is ISC"
_DEFAULTS_TO = re.compile(r"`?([A-Za-z_][\w.-]*)`?(?:\s+(?:option|argument|parameter|setting|flag|attribute|config))?"
                          r",?\s+(?:(?:which|whose)\s+)?defaults?\s+(?:to|is)\s+`?([\w.'\"/-]+?)`?(?=[\s,;:)]|\.?$|\.\s)")
# a reference page's "* Default: 15" under the option's heading
_DEFAULT_FIELD = re.compile(r"(?<![\w-])Default:\s*[\"'`]?([^\"'`\s,;]+)")


# Where a list item or a paragraph ends: a blank line, or the next line's bullet.
_ITEM_END = re.compile(r"\n[ \t]*\n|\n(?=[ \t]*[*+-][ \t])")


def _item_field(name: str, text: str) -> re.Match | None:
    """The one "Default: …" field of the list item (or paragraph) of `text` that opens with `name`."""
    for part in _ITEM_END.split(text):
        fields = list(_DEFAULT_FIELD.finditer(part))
        if len(fields) == 1 and re.match(rf"`?{re.escape(name)}`?(?![\w.-])", part.lstrip(" \t\n*+-")):
            return fields[0]
    return None


def _default_rival(claim: str, sentence: str, fields_only: bool = False) -> tuple[str, str]:
    """(the claim's default, the source's) when the claim says a named option defaults to one value
    and the sentence gives it another, in a signature ("follow_symlink=False"), in words
    ("`follow_symlink` … Defaults to `False`"), or as the one "Default: …" field of a text that names
    the option before it (a reference page's section) or of the list item that opens with it
    (`_item_field`); `fields_only`: those last ways only. ('', '') otherwise."""
    fields = list(_DEFAULT_FIELD.finditer(sentence))
    for name, written in _claimed_defaults(claim):
        value = written.strip("'\"").lower()
        if not name or "_" not in name and not name[:1].islower():
            continue  # only an option's code name counts ("samesite", "check_dir"); "It defaults to …" names none
        patterns = () if fields_only else (rf"(?<![\w.]){re.escape(name)}\s*=\s*([^,)\s]+)",
                                           rf"`{re.escape(name)}`[^\n]*?[Dd]efaults? to `?([^`\s,;]+?)`?(?=[\s,;)]|\.?$|\.\s)")
        found = [f for pattern in patterns if (f := re.search(pattern, sentence))]
        if not found and len(fields) == 1 and namelib.mentions(name, sentence[:fields[0].start()]):
            found = fields  # the option's section: "init-license * Default: "ISC"" (not the item before it)
        elif not found and (field := _item_field(name, sentence)):
            found = [field]  # the option's own item of a list of options: "* `historySize` {number} … Default: `30`."
        for f in found:
            if f.group(1).strip("'\"`").lower() != value:
                return written, f"{name}={f.group(1).strip('`')}"
    return "", ""


_DEFAULT_VALUE = re.compile(r"\bdefaults?\s+(?:to|is)\s+`?([\w.'\"/-]+?)`?(?=[\s,;:)]|\.?$|\.\s)")


def _claimed_defaults(claim: str) -> list[tuple[str, str]]:
    """(the option, its default as written) for each default the claim gives: the name right before
    "defaults to" ("the follow_symlink option defaults to True"), else, for "it defaults to 50" or
    "… and defaults to 500", the one code name the claim gives before it ("" when none or several)."""
    named = {m.start(2): m.group(1) for m in _DEFAULTS_TO.finditer(claim)}
    found = []
    for m in _DEFAULT_VALUE.finditer(claim):
        name = named.get(m.start(1), "")
        if not name or name.lower() in FUNCTION_WORDS:  # "it defaults to", "and defaults to"
            options = {n.text for n in namelib.names(claim[:m.start()]) if n.kind == "code"}
            name = options.pop() if len(options) == 1 else ""
        found.append((name, m.group(1)))
    return found


def _context_score(left: list[str], right: list[str], r_left: list[str], r_right: list[str]) -> int:
    """SWAP_CONTEXT's score: the same word right before (2) and right after (2), +1 per shared word near."""
    score = 2 * (left[-1:] == r_left[-1:] and bool(left)) + 2 * (right[:1] == r_right[:1] and bool(right))
    return score + len(set(left) & set(r_left)) + len(set(right) & set(r_right))


_ARTICLES = frozenset({"the", "a", "an"})


def _stems(text: str, start: int, end: int, n: int = 3) -> tuple[list[str], list[str]]:
    """`_context` by stem, articles left out."""
    left = [stem(w) for w in words(text[:start]) if w not in _ARTICLES][-n:]
    right = [stem(w) for w in words(text[end:]) if w not in _ARTICLES][:n]
    return left, right


def _context(text: str, start: int, end: int, n: int = 3) -> tuple[list[str], list[str]]:
    """The n lowercased words before and after text[start:end]."""
    left = words(text[:start])[-n:]
    right = words(text[end:])[:n]
    return left, right


# One item of a list: what follows "and", "or" or a comma, up to the clause's end, a function word or
# LIST_ITEM_WORDS words ("git annex", "FreeBSD", "the `ort` strategy").
LIST_ITEM_WORDS = 3
_LIST_TOKEN = re.compile(r"[\w@$][\w@$./+-]*|[,;:.!?()]")
_LIST_JOINS = frozenset({"and", "or", ","})
_ITEM_SKIP = frozenset({"the", "a", "an"})


def _list_tokens(text: str) -> list[str]:
    """The text's words (quotes and backticks dropped, lower case, a trailing dot off) and punctuation."""
    return [t.lower().rstrip(".") or t for t in _LIST_TOKEN.findall(text.replace("`", " ").replace("'", " ").replace('"', " "))]


def _items(tokens: list[str]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each (the words just before a list join, the item after it) of a token list."""
    out = []
    for i, t in enumerate(tokens):
        if t not in _LIST_JOINS or i == 0:
            continue
        before = tuple(w for w in tokens[max(0, i - LIST_ITEM_WORDS):i] if w.isalnum() or "_" in w or "." in w)
        j = i + 1
        while j < len(tokens) and tokens[j] in _ITEM_SKIP:
            j += 1
        item: list[str] = []
        while j < len(tokens) and len(item) < LIST_ITEM_WORDS and tokens[j] not in FUNCTION_WORDS and WORD.match(tokens[j]):
            item.append(tokens[j])
            j += 1
        if before and item:
            out.append((before, tuple(item)))
    return out


def list_swapped(claim: str, sentences: list[str]) -> tuple[str, str]:
    """(the claim's list item, the evidence's in its place) where a claim's list ("git lfs and git
    subtree") has the evidence's list ("'git lfs' and 'git annex'") with one item swapped for one the
    sentence never has: the same words before the join, items of the same length that share a word or
    are both written as names, and no aligned sentence with the claim's item. ('', '') otherwise."""
    claim_tokens = _list_tokens(claim)
    claim_items, claim_words = _items(claim_tokens), set(claim_tokens)
    if not claim_items:
        return "", ""
    found, stated = [], set()
    for sentence in sentences:
        tokens = _list_tokens(sentence)
        said = set(tokens)
        said_stems = {stem(w) for w in tokens}
        for before, item in claim_items:
            if set(item) <= said:
                stated.add(item)  # an aligned sentence has the claim's item
                continue
            for e_before, e_item in _items(tokens):
                if e_before[-1:] != before[-1:] or len(e_item) != len(item) or e_item == item:
                    continue
                mine = [w for w in item if stem(w) not in said_stems and w not in FUNCTION_WORDS]  # "sources" / "source" is said
                theirs = [w for w in e_item if w not in item]
                if not mine or not theirs or claim_words.intersection(theirs):
                    continue
                if not (set(item) & set(e_item) or (_name_like(claim, item) and _name_like(sentence, e_item))):
                    continue
                if any(a.startswith(b) or b.startswith(a) or stem(a) == stem(b) for a in mine for b in theirs):
                    continue  # "Mac" / "macOS": the same thing written shorter; "dependency" / "dependencies"
                if not (_nouns(claim, mine) and _nouns(sentence, theirs)):
                    continue  # "name and version identify a candidate": a verb ran on after the list
                found.append((item, e_item, sentence))
    found = [(item, e_item, sentence) for item, e_item, sentence in found if item not in stated]
    if not found:
        return "", ""
    item, e_item, sentence = found[0]
    return _as_written(item, claim), _as_written(e_item, sentence)


def _as_written(item: tuple[str, ...], text: str) -> str:
    """A list item's words as `text` writes them ("git annex" in "'git annex.'", "FreeBSD")."""
    m = re.search(r"(?<!\w)" + r"\W{1,3}".join(map(re.escape, item)) + r"(?!\w)", text, re.IGNORECASE)
    return m.group(0) if m else " ".join(item)


def _nouns(text: str, found: list[str]) -> bool:
    """Whether the words `found` of `text` are all nouns or names by its parse (cached)."""
    from pipeline.verify.meaning import parse

    tags = {t.lower_: t.pos_ for t in parse(text)}
    return all(tags.get(w, "NOUN") in ("NOUN", "PROPN", "X") for w in found)


def _name_like(text: str, item: tuple[str, ...]) -> bool:
    """Whether a list item is written as a name in `text` (a capital, digit or code mark)."""
    return any(n.key in {w.lower() for w in item} or any(w in n.text.lower() for w in item) for n in namelib.names(text))


# An option with its value as commands are written ("--invocation-type Event", "--runtime=nodejs22.x"),
# and a key with its value as example output writes it ("MemorySize": 128, "State": "Creating").
_OPTION_VALUE = re.compile(r"(?<![\w-])(--[a-z][\w-]*)(?:[ =]+)([\w$./][^\s,;()`'\"\\]*)")
_KEY_VALUE = re.compile(r'"([A-Za-z]\w*)"\s*:\s*"?([\w$][^",}\]\n]*?)"?\s*(?=[,}\]\n]|$)')
_PLACEHOLDER = re.compile(r"\.\.\.|…|[<>|\[\]{}]")  # "<set>", "S3Bucket=...": a value left to the reader
# How an answer joins a key to its value: "MemorySize of 128", "State as Creating", "Timeout is 3".
_JOIN = r"(?:\s+(?:of|as|is|was|set to|to|=|:)\s+|\s+)"
# Every word of a claim followed by what may be its value (a lookahead: "its State as Creating" reads
# "its State" and "State as Creating"); output keys are matched as written.
_KEY_THEN_VALUE = re.compile(rf"(?<![\w-])(?=([A-Za-z]\w*){_JOIN}([\w$][\w.:$-]*))")


def _example_values(passage: str) -> dict[str, dict[str, str]]:
    """Each option's and each output key's values in the passage's examples: {key: {value in lower
    case: value as written}}; options by their name in lower case, output keys as written."""
    found: dict[str, dict[str, str]] = {}
    for key, value in [*((k.lower(), v) for k, v in _OPTION_VALUE.findall(passage)), *_KEY_VALUE.findall(passage)]:
        value = value.strip().rstrip(".")
        if not _PLACEHOLDER.search(value):
            found.setdefault(key, {})[value.lower()] = value
    return found


def _value_like(word: str) -> bool:
    """Whether a word after a key reads as its value: a number, a code or a capitalised word, not a
    word of the sentence ("the Runtime along with …") nor the kind of the value ("a Location URL")."""
    return word.lower() not in FUNCTION_WORDS and word not in namelib.KIND_WORDS \
        and (word[:1].isupper() or any(not c.isalpha() for c in word))


def value_swapped(claim: str, passage: str) -> tuple[str, str]:
    """(the claim's value, the evidence's key and value) where the claim gives an option or an output key
    of the passage's examples a value the passage never has: "--invocation-type Asynchronous" where the
    example runs "--invocation-type Event", "a MemorySize of 1024" where its output has "MemorySize": 128.
    ('', '') otherwise, and where the examples give that key more than one value. An option no passage has,
    given a value of the examples, is answered by the option that takes it there (`_option_swapped`)."""
    examples = _example_values(passage)
    if not examples:
        return "", ""
    lower = passage.lower()
    pairs = [(m.group(1).lower(), m.group(2)) for m in _OPTION_VALUE.finditer(claim)]
    pairs += [(m.group(1), m.group(2)) for m in _KEY_THEN_VALUE.finditer(claim) if m.group(1) in examples]
    for key, written in pairs:
        value = written.rstrip(".:")
        theirs = examples.get(key, {})
        if len(theirs) != 1 or not _value_like(value) or _PLACEHOLDER.search(written) or value.lower() in theirs \
                or re.search(rf"(?<![\w.-]){re.escape(value.lower())}(?![\w-])", lower):
            continue
        (their,) = theirs.values()
        return value, f"{key} {their}" if key.startswith("--") else f"{key}: {their}"
    return _option_swapped(claim, passage, examples)


def _option_swapped(claim: str, passage: str, examples: dict[str, dict[str, str]]) -> tuple[str, str]:
    """(the claim's option, the evidence's) where the claim gives a value of the passage's examples to an
    option the passage never has, and one other option of the examples takes that value: "--alias GREEN"
    where the example runs "--qualifier GREEN". ('', '') otherwise."""
    for m in _OPTION_VALUE.finditer(claim):
        option, value = m.group(1), m.group(2).rstrip(".:")
        if not _value_like(value) or _PLACEHOLDER.search(value) or namelib.mentions(option, passage):
            continue
        keys = [k for k, values in examples.items() if k.startswith("--") and value.lower() in values]
        if len(keys) == 1:
            return option, keys[0]
    return "", ""
