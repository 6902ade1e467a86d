"""Reading what an agent reported at the end of a turn as a developer would (pure, `re` only: the hooks import it).

A report is markdown: headings, prose, lists, tables, code, the client's decorations. What it says came of the
turn is its *lead*: the headline when it names something, then its first sentences of prose, whole, leaving out
narration ("Let me check ..."), filler ("Perfect!"), praise that names nothing ("a comprehensive success"),
questions to the user, table cells, code and lists. What it says is *next* is the items under a "Next steps" /
"Remaining" heading and the sentences that say something is left, in whole sentences. Nothing is ever cut in
the middle: a sentence that does not fit is left out.
"""

from __future__ import annotations

import re

from .digest import looks_like_code, plain, short_urls

_FENCE = re.compile(r"^\s*(?:```|~~~)")
_RULE = re.compile(r"^\s*(?:[-*_=─━]\s*){3,}$")
_BOX = re.compile(r"[│┃┌┐└┘├┤┬┴┼╭╮╰╯═║]")
_INSIGHT = re.compile(r"^\W*★\s*insight", re.IGNORECASE)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*)$")
_BOLD_LINE = re.compile(r"^\s*\*\*([^*]+)\*\*:?\s*$")
_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+(.*\S)")
# "SUMMARY: ...", "**Fix:** ...", "Root cause: ...": a label then a statement
_LABELLED = re.compile(r"^\s*\**([A-Za-zÀ-ÿ][\w ÄÖÜäöüß-]{1,24}?)\**\s*:\**\s+(\S.*)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'`(*\[]?[A-Z0-9#ÄÖÜ])|(?<=[。！？])\s*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_NARRATION = re.compile(
    r"^(?:now\s+)?(?:let me|let's|let us|i'll|i will|i'm going to|i am going to|i need to|i should|i can see|i see|"
    r"i found|i notice|i understand|now i|next,? i|first,? i|looking at|checking|"
    r"i'?ve (?:read|reviewed|looked|analy[sz]ed|examined|explored|checked|gathered)|i have (?:read|reviewed|looked)|"
    r"based on (?:my|the) (?:analysis|review)|this (?:looks|means|is because)|"
    r"it (?:looks|seems) like|okay|ok\b|alright|"
    r"good(?: choice| catch| news| question)?\b|got it|understood|aha|hmm|ah\b|oh\b|sure\b|before i|"
    r"you(?:'re| are) (?:absolutely |completely |totally )?right|"
    # the same openings in German, French and Spanish
    r"lass (?:mich|uns)|ich werde|ich muss|ich sehe|ich schaue|ich prüfe|jetzt (?:werde|prüfe|schaue)|"
    r"zuerst (?:werde|muss|schaue|prüfe) ich|"
    r"als nächstes|bevor ich|du hast (?:völlig |absolut )?recht|sie haben recht|verstanden|alles klar|"
    r"laisse[zr]?-moi|je vais|je dois|je vois|maintenant,? je|d'abord,? je|tu as raison|vous avez raison|"
    r"compris|d'accord|déjame|voy a|necesito|veo que|ahora voy|tienes razón|entendido|"
    r"de acuerdo)(?![\w'])",
    re.IGNORECASE)
_FILLER = re.compile(r"^\W*(?:perfect|great|excellent|awesome|wonderful|fantastic|done|success|all set|"
                     r"mission accomplished|complete|completed|fixed|thank you[^.!?]*|thanks[^.!?]*)\W*$",
                     re.IGNORECASE)
_FILLER_PREFIX = re.compile(r"^\W*(?:perfect|great|excellent|awesome|done|success|fixed|good|nice)[!.]\s+",
                            re.IGNORECASE)
# praise no statement of fact carries: a sentence holding it is the agent's self-assessment, whatever it names
_HYPE = re.compile(r"\b(?:production[- ]ready|enterprise[- ]grade|world[- ]class|bulletproof|state[- ]of[- ]the[- ]art|"
                   r"best[- ]in[- ]class|flawless(?:ly)?|masterclass|professional[- ]grade|"
                   r"(?:clear|clean|proper) separation of concerns|(?:closure|success) rate|"
                   r"well[- ](?:structured|organi[sz]ed|architected|designed)|follows? best practices)\b",
                   re.IGNORECASE)
# praise that a sentence naming what it is about may still carry
_PRAISE = re.compile(r"\b(?:comprehensive(?:ly)?|robust|seamless(?:ly)?|incredible|outstanding|amazing|100% complete|"
                     r"fully (?:functional|implemented|operational)|significantly improved|dramatically|modern design|"
                     r"complete functionality|ready for (?:use|production)|excellence|exceptional)\b", re.IGNORECASE)
# a claim that the work succeeded
CLAIM = re.compile(r"\b(?:success(?:fully)?|succe(?:ed|eds|eded)|complete[ds]?|done|finished|works?|working|"
                   r"solved|solves|addresse[sd] (?:your|the|all)|"
                   r"pass(?:ing|e[sd])?|fixed|tested|functionality|"
                   r"resolved|ready (?:for|to)|safe to|production|no (?:issues|errors|problems)|coverage|"
                   r"erfolgreich|abgeschlossen|funktioniert|funktionsfähig|operativ|fertig|behoben|"
                   r"réussi|terminé|corrigé|fonctionne|exitoso|completado|funciona|corregido)\b", re.IGNORECASE)
# the agent conceding that what it reported was wrong: the user (or a check) showed otherwise
CONCEDES = re.compile(r"^\W*(?:you(?:'re| are) (?:absolutely |completely |totally |quite )?right|good catch|"
                      r"(?:my )?apologies|i apologi[sz]e|sorry|you(?:'re| are) correct|"
                      r"du hast (?:völlig |absolut |vollkommen )?recht|sie haben (?:völlig )?recht|entschuldig|"
                      r"tu as raison|vous avez raison|désolé|pardon|tienes (?:toda la )?razón|tiene razón|"
                      r"perdón|lo siento)\b", re.IGNORECASE)
# the verbs of a change made ("added", "updated", "replaced", "geändert", "ajouté", "cambiado")
_CHANGE_VERB = (r"(?:add(?:ed|s)?|updated?|changed?|modified|replaced|removed|set|switched|moved|bumped|renamed|"
                r"rewr(?:ote|itten)|refactored|created|adjusted|tweaked|fixed|hinzugefügt|geändert|entfernt|ersetzt|"
                r"ajouté|modifié|supprimé|añadido|cambiado|eliminado)")
# a statement that names a change ("Added a version badge in panel.html", "panel.js - Updated the header")
NAMES_CHANGE = re.compile(rf"\b{_CHANGE_VERB}\b", re.IGNORECASE)
# a statement that says what the agent changed ("I've updated the selector to ...", "Changed the port to 3001")
SAYS_CHANGE = re.compile(rf"^\W*(?:i(?:'ve| have)? )?(?:now )?{_CHANGE_VERB}\b", re.IGNORECASE)
# a statement of what caused a problem
CAUSE = re.compile(r"\b(?:root cause|the (?:real |actual |underlying )?(?:issue|problem|bug|cause|culprit|reason) "
                   r"(?:is|was|here is)|(?:is|was) caused by|that's why|this is why|the reason (?:is|was)|"
                   r"(?:i )?(?:see|found|spotted) the (?:issue|problem|bug|cause)|"
                   r"(?:that's|here's) the (?:issue|problem|bug)|"
                   r"(?:ich sehe|gefunden:?) (?:das|den) (?:problem|fehler)|"
                   r"j'ai trouvé le problème|encontré el problema|"
                   r"ursache|das problem (?:ist|war)|liegt (?:daran|an)|la cause|le problème (?:est|était)|"
                   r"la causa|el problema (?:es|era))\b|\bbut (?:the|it|this)\b.{0,80}\bactually\b", re.IGNORECASE)
# a prompt telling the agent its result does not work (yet)
COMPLAINT = re.compile(r"\b(?:still (?:not|doesn't|does not|isn't|is not|fails?|failing|broken|the same|same|"
                       r"getting|shows?|see|has|have)|(?:doesn't|does not|didn't|did not|won't|isn't|is not) "
                       r"(?:work|load|start|run|show|change|compile|build|help|fix)|not working|no longer works|"
                       r"nothing (?:changed|happens)|(?:all|they|it|everything) (?:now |still )?(?:sounds?|looks?) "
                       r"the same|same (?:error|problem|issue|result)|still broken|"
                       r"funktioniert (?:immer noch |noch |weiterhin )?nicht|"
                       r"geht (?:immer noch |noch )?nicht(?! (?:darum|um))|"
                       r"klappt (?:immer noch |noch )?nicht|"
                       r"immer noch (?:nicht|kaputt|gleich|falsch|derselbe|dasselbe)|"
                       r"(?:ne )?(?:marche|fonctionne) (?:toujours )?pas|toujours pas|"
                       r"no funciona|sigue sin|todavía no|sigue (?:fallando|igual))\b", re.IGNORECASE)
# a claim about everything at once ("all work is done", "the system is fully working"): no one thing it is about
_SWEEPING = re.compile(r"\b(?:all|every(?:thing|one)?|entire(?:ly)?|whole|fully|completely|system|alles|alle|"
                       r"gesamte?|voll(?:ständig)?|tout(?:es?)?|entièrement|todo|todas?|completamente)\b",
                       re.IGNORECASE)
_GENERIC_HEADING = re.compile(r"^\W*(?:summary|overview|analysis|details|results?|status|changes?(?: made)?|"
                              r"what (?:was|i) (?:done|changed|did)|key (?:changes|highlights|findings)|"
                              r"implementation(?: summary)?|final (?:summary|reflection|status)|"
                              r"(?:task|work|project) (?:complete|completed|done)|complete|done|next steps?|"
                              r"verification|testing|files? (?:changed|modified))\W*$", re.IGNORECASE)
# a name a reader can act on: an issue or PR number, a version, a hash, a file, an identifier, a path, a code span
_NAMES = re.compile(r"#\d+|\bv?\d+\.\d+(?:\.\d+)*\b|\b[0-9a-f]{7,40}\b"
                    r"|[\w@-]+(?:/[\w.@-]+)*\.[A-Za-z][A-Za-z0-9]{0,5}\b|\b[a-z]+_[\w]+|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z]\w*|\b[\w.-]+/[\w./-]+|`[^`]+`|\b\d+\b")
_NEXT_HEADING = re.compile(
    r"^\W*(?:remaining(?: tasks| work| items| issues)?|(?:work|tasks|items) remaining|next steps?|what'?s next|"
    r"still to do|open (?:items|issues|questions|work|points)|left to do|to ?dos?|not (?:yet )?done|follow[- ]ups?|"
    r"pending|known issues|blockers?|nächste schritte|offene punkte|prochaines étapes|próximos pasos)\W*$",
    re.IGNORECASE)
_NEXT_SENTENCE = re.compile(
    r"\b(?:next step|next,|still (?:need|needs|to be|has to|have to|failing|broken|open|pending)|remain(?:s|ing)? to\b|"
    r"not yet (?:done|implemented|fixed|merged|pushed|tested|verified|committed)|left to do|follow[- ]up|"
    r"to do:|todo:|blocked (?:by|on)|waiting (?:for|on)|once .{3,40} (?:is|are) (?:merged|done|fixed)|"
    r"should (?:now )?be (?:tested|verified|reviewed)|needs? (?:to be )?(?:tested|verified|reviewed|re-?implemented))",
    re.IGNORECASE)
# a list item that says what to do, not what was done ("Add :debug_payload per row"): a plan or a to-do
_PLAN_ITEM = re.compile(r"^\W*(?:add|update|create|remove|fix|implement|use|run|check|make|move|merge|write|test|"
                        r"verify|ensure|replace|refactor|extract|set|install|build|deploy|delete|rename|change|"
                        r"investigate|consider|review|document|configure|migrate|split|wire|try|support)\b",
                        re.IGNORECASE)
_QUESTION_END = re.compile(r"\?\W*$")
# a sentence whose end is a word that needs what follows ("available in:", "the changes are:")
_DANGLING = re.compile(r"\b(?:in|for|to|with|by|on|at|of|from|into|are|is|as|include[sd]?|including|like|these|"
                       r"following|the|an?|von|mit|für|als|sind|ist|wie|folgende[n]?|die|der|das|de|en|avec|pour|"
                       r"sont|est|les|des|con|para|son|es|por|los|las|siguientes?)\s*[:：]$", re.IGNORECASE)


def _blocks(report: str) -> list[tuple[str, str]]:
    """(kind, text) of each line that is not code, a table, a box drawing, a rule or an "Insight" aside:
    kind is "heading", "item", "labelled" or "prose"."""
    out: list[tuple[str, str]] = []
    fenced = insight = False
    for line in report.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        if _INSIGHT.match(line):
            insight = True
            continue
        if insight:
            insight = not line.strip().startswith("`─") and "─────" not in line
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith(("|", ">")) or _RULE.match(stripped) or _BOX.search(stripped):
            continue  # a table, a quoted block (someone else's words), a rule or a drawing
        heading = _HEADING.match(line) or _BOLD_LINE.match(line)
        if heading:
            out.append(("heading", plain(heading.group(1))))
            continue
        item = _ITEM.match(line)
        if item:
            out.append(("item" if len(line) - len(line.lstrip()) <= 1 else "subitem", item.group(1)))
            continue
        labelled = _LABELLED.match(stripped)
        if labelled and _CELL_LABEL.match(labelled.group(1).strip()):
            continue  # one cell of a finding ("Location: a.scss:877"): nothing without the finding it belongs to
        if labelled and labelled.group(1).split()[0].isupper() or labelled and len(labelled.group(1).split()) <= 2 \
                and stripped.startswith("**"):
            out.append(("labelled", labelled.group(2)))
            continue
        out.append(("prose", stripped))
    return out


def sentences(text: str) -> list[str]:
    """The sentences of one line of prose, as plain text, links shortened."""
    return [s for s in (short_urls(plain(part)).strip() for part in _SENTENCE_END.split(text)) if s]


_VERSIONED = re.compile(r"\b([A-Za-z][\w+-]*(?:\.[A-Za-z]+)?)\s+(v?)(\d+(?:\.\d+)*)\b")


def versions(text: str) -> dict[str, str]:
    """The versions a text gives things ("Next.js 15.5.2" -> {"next.js": "15.5.2"}): a dotted number, a number
    after "v", or any number after a dotted name ("Next.js 14"); not a count ("Updated 3 files")."""
    return {name.lower(): number for name, v, number in _VERSIONED.findall(text)
            if "." in number or v or "." in name or "+" in name}


def words(text: str) -> int:
    """How many words a text has: its letter runs, and a word per two characters of Chinese, Japanese or Korean."""
    return len(re.findall(r"[^\W\d_]{2,}", _CJK.sub(" ", text))) + len(_CJK.findall(text)) // 2


def names(text: str) -> set[str]:
    """The concrete things a text names (issue numbers, versions, hashes, files, identifiers, code spans, numbers)."""
    return set(_NAMES.findall(text))


# "..., so let me continue with that": the agent's next step, wherever the sentence says it
_NEXT_STEP = re.compile(r"\b(?:let me|let's|lass mich|lass uns|laisse-moi|laissez-moi|déjame)\b", re.IGNORECASE)


def is_narration(sentence: str) -> bool:
    """The agent telling what it is about to do or what it sees, not what came of the work."""
    return bool(_NARRATION.match(sentence.lstrip("*_ ")) or _NEXT_STEP.search(sentence))


_FIELD = re.compile(r"^\W*[\w .'-]{1,24}:\s+(?P<value>.+)$")


# the labels of a finding's or a table row's cells
_CELL_LABEL = re.compile(r"^(?:location|files?|lines?|path|where|severity|priority|impact|effort|wcag|standard|"
                         r"category|type|status|score|level|owner|evidence|current|before|after|expected|actual|"
                         r"datei|ort|zeile|fichier|ligne|archivo|línea)$", re.IGNORECASE)


def is_field(text: str) -> bool:
    """A "Label: value" cell ("Location: _includes/footer.html, lines 5, 12"): a field of a form, not a statement."""
    found = _FIELD.match(text)
    if found and _CELL_LABEL.match(text.split(":", 1)[0].strip(" *_`-")):
        return True
    return bool(found) and words(re.sub(_NAMES, " ", found.group("value"))) <= 3


# the state of the moment: a server running now, the user told to reload; gone by the next session
_MOMENT = re.compile(r"\b(?:is|are|should|will|can)(?: now| still)?(?: be)? (?:running|accessible|available|live|up|"
                     r"serving|listening|reachable)\b[^.!?]{0,60}(?:https?://|localhost|127\.0\.0\.1|0\.0\.0\.0|"
                     r"\bport \d+)|\b(?:server|app|site) (?:is )?(?:now )?(?:running|started|starting) "
                     r"(?:successfully|in the background)|\b(?:try|please) (?:refreshing|refresh|reloading|reload|"
                     r"hard[- ]refresh)\b|\bstarted serving on\b|"
                     # the agent's expectation of what its change does, not what was seen
                     r"\bshould (?:now|then) (?:be|have|work|show|look|display|fix|appear)|\bsollte (?:jetzt|nun)\b|"
                     r"\bdevrait (?:maintenant|désormais)\b|\bdebería (?:ahora|ya)\b", re.IGNORECASE)


_POINTING = re.compile(r"^\W*(?:this|that|these|those|it|das|dies|ceci|cela|esto|eso)\s+(?:was|is|were|are|war|ist|"
                       r"était|est|era|es)\b", re.IGNORECASE)


def says_something(sentence: str) -> bool:
    """A sentence worth showing as an outcome: not narration, filler, a question to the user, nor the agent's
    self-assessment (hype whatever it names; praise, or success claimed of everything at once, naming nothing), and long
    enough to be a statement."""
    core = _FILLER_PREFIX.sub("", sentence).strip()
    if not core or _FILLER.match(core) or is_narration(core) or _QUESTION_END.search(core) or looks_like_code(core):
        return False
    if words(core) < 3 or _HYPE.search(core) or _MOMENT.search(core):
        return False
    if _POINTING.match(core) and words(core) <= 10 and not names(core):
        return False  # "This was from a previous run.": about something the reader cannot see
    sweeping = CLAIM.search(core) and _SWEEPING.search(core.replace("-", " "))
    return not ((_PRAISE.search(core) or sweeping) and not names(core))


def statements(report: str) -> list[tuple[float, int, str]]:
    """The statements of a report as (value, order, text): its headline when it names something, the sentences of
    its prose that say something, and its top-level list items that name something; worth more the more they
    name and the earlier they come (a report opens with what came of the work)."""
    out: list[tuple[float, int, str]] = []
    seen: set[str] = set()
    prose = 0

    def add(text: str, bonus: float) -> None:
        text = _FILLER_PREFIX.sub("", text).strip()
        if "…" in text.rstrip(".")[-3:]:
            return  # cut where the text was stored, not a whole statement
        if text and text not in seen:
            seen.add(text)
            named = len(names(text))
            out.append((1.0 + 1.5 * min(named, 4) + bonus - min(len(text), 400) / 400, len(out), text))

    for kind, text in _blocks(report):
        if kind == "heading":
            headline = plain(text).strip(" :")
            if not out and names(headline) and not _GENERIC_HEADING.match(headline) and says_something(headline):
                add(headline, 1.5)
        elif kind == "item":
            item = plain(text)
            if is_field(item):
                continue
            named = len(names(item))
            if named and (words(item) >= 4 or named >= 2 and words(item) >= 2) and len(item) <= 220 \
                    and (says_something(item) or named >= 2 and not is_narration(item)) and not _PLAN_ITEM.match(item):
                add(item.rstrip(":;,") + ("" if item[-1:] in ".!?" else "."), 0.0)
        elif kind in ("prose", "labelled"):
            for sentence in sentences(text):
                intro = sentence.endswith((":", "："))
                if intro and (not names(sentence) or _DANGLING.search(sentence)) or is_field(sentence):
                    continue  # an introduction to a list says nothing without it
                if says_something(sentence.rstrip(":：")):
                    add(sentence.rstrip(":：") + ("." if intro else ""), 2.0 if prose < 2 else 0.5)
                    prose += 1
    return out


def lead(report: str, limit: int = 320) -> list[str]:
    """What a report says came of the turn: its most telling statements (`statements`) that fit whole in `limit`
    characters, in the order they were written. Never cut: what does not fit is left out."""
    chosen: list[tuple[int, str]] = []
    used = 0
    for _, order, text in sorted(statements(report), key=lambda s: -s[0]):
        if used + len(text) + 1 <= limit:
            chosen.append((order, text))
            used += len(text) + 1
    return [text for _, text in sorted(chosen)]


def next_steps(report: str, limit: int = 4) -> list[str]:
    """What a report says is left or next: the items under a "Next steps" / "Remaining" heading, and prose
    sentences that say something still needs doing, whole."""
    found: list[str] = []
    under = False
    for kind, text in _blocks(report):
        if kind == "heading" or kind == "labelled" and _NEXT_HEADING.match(text.split(":")[0]):
            under = bool(_NEXT_HEADING.match(plain(text).strip(" :")))
            continue
        if kind == "prose" and _NEXT_HEADING.match(plain(text).strip(" :")):
            under = True
            continue
        if kind == "item" and under:
            item = plain(text)
            if len(item.split()) >= 2 and item not in found:
                found.append(item)
        elif kind in ("prose", "labelled"):
            under = under and kind == "labelled"
            for sentence in sentences(text):
                if _NEXT_SENTENCE.search(sentence) and not is_narration(sentence) and sentence not in found \
                        and not _QUESTION_END.search(sentence) and not sentence.rstrip().endswith((":", "：")):
                    found.append(sentence)
        if len(found) >= limit:
            break
    return found[:limit]


def fit(pieces: list[str], limit: int, sep: str = " ") -> str:
    """As many of `pieces` as fit whole in `limit` characters, in order (the rest left out, none cut)."""
    out: list[str] = []
    used = 0
    for piece in pieces:
        if used + len(piece) + (len(sep) if out else 0) <= limit:
            out.append(piece)
            used += len(piece) + (len(sep) if len(out) > 1 else 0)
    return sep.join(out)
