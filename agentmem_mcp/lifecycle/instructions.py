"""Which of a user's typed sentences are standing rules for the project, and which prompts corrected the agent
(pure, `re` only).

A standing instruction is a rule the user set in their own words: "always / never / prefer ... over / don't /
avoid / from now on / whenever ..." (English, German, French, Spanish), said as a rule, not asked ("should we
always ...?"), not a one-off task ("make sure the tests pass", "name it X"), and typed by the user: text the user
pasted (a fenced or quoted block, lines after "here is what I found:", a long paste) is someone else's words.
A correction is a short prompt the agent answered by admitting its mistake ("You're right, I shouldn't edit
generated code"): the user's words are the rule, the agent's admission says what it was about.
"""

from __future__ import annotations

import re

from .digest import plain
from .reports import is_narration, names, sentences, words

# a rule marker at the start of the sentence (after "please", "and", "but", "so"), or "you/we should/must always"
_LEAD = r"^(?:(?:please|and|but|so|also|ok|okay|pls|bitte|und|aber|also|s'il te plaît|por favor)[,]?\s+)*"
_DIRECTIVE = re.compile(
    _LEAD + r"(?:always|never|don'?t|do not|avoid|stop|from now on|going forward|in (?:the )?future|whenever|"
    r"every time|prefer|make sure (?:to )?always|immer|niemals|nie\b|keine?n? |vermeide|ab jetzt|künftig|zukünftig|"
    r"grundsätzlich|toujours|jamais|ne (?:jamais|pas)|désormais|évite|siempre|nunca|no (?:uses|hagas|edites)|evita|"
    r"a partir de ahora)\b",
    re.IGNORECASE)
_RULE_INSIDE = re.compile(
    r"\b(?:you|we|the agent|claude) (?:should|must|need to|have to) (?:always|never)\b|\b(?:always|never) "
    r"(?:use|run|edit|commit|push|write|add|create|make|put|keep|call|touch|change|modify|delete|remove|test|check|"
    r"ask|include|prefer|work|merge|rebase|deploy|format|lint|update|install|start|do)\b|\bprefer\w* \S+(?: \S+){0,5} "
    r"(?:over|to|instead of|rather than)\b|\b(?:ich )?präferiere immer\b|\bmerk (?:dir|es dir) (?:das|dies)\b|"
    r"\bals (?:leitlinie|regel|grundsatz)\b|\bas a (?:rule|guideline|convention)\b|\bfrom now on\b|\bgoing forward\b",
    re.IGNORECASE)
_QUESTION = re.compile(
    r"\?\W*$|^(?:should|shall|can|could|would|will|is|are|do|does|did|what|how|why|when|where|which|who|"
    r"soll|sollen|kann|können|was|wie|warum|wann|wo|welche|est-ce|pourquoi|comment|debo|puedo|cómo|por qué)\b",
    re.IGNORECASE)
_PASTE_INTRO = re.compile(r"(?:found|here is|here's|below|following|pasted|copied|says?|reads?|wrote|output|log|"
                          r"error|section|snippet|docs?|readme|contributing)\b[^.!?\n]{0,80}:\s*$", re.IGNORECASE)
_FENCE = re.compile(r"```.*?(?:```|$)|~~~.*?(?:~~~|$)", re.DOTALL)
_QUOTED = re.compile(r"\"[^\"\n]{12,}\"|“[^”\n]{12,}”|„[^“\n]{12,}“|«[^»\n]{12,}»")
TYPED_CHARS = 1200  # beyond this, a prompt's paragraphs after the first are taken as pasted
MIN_WORDS, MAX_WORDS = 3, 50
_ADMISSION = re.compile(
    r"^\W*(?:you'?re (?:absolutely |completely |totally )?right|you are (?:absolutely )?right|good catch|my mistake|"
    r"my bad|sorry|apologies|i apologi[sz]e|you'?re correct|that was (?:a|my) mistake|i shouldn'?t have|"
    r"du hast (?:völlig |absolut )?recht|sie haben recht|verstanden|mein fehler|entschuldigung|"
    r"tu as raison|vous avez raison|tienes razón|mi error)\b", re.IGNORECASE)
CORRECTION_PROMPT_CHARS = 240


def typed_text(prompt: str) -> str:
    """The part of a prompt the user typed: fenced blocks, quote lines (`> ...`) and what follows a line that
    introduces a paste ("Here is the CONTRIBUTING section I found:") left out; of a long prompt, its first paragraph."""
    text = _FENCE.sub("\n", prompt)
    kept: list[str] = []
    for line in text.split("\n"):
        if line.lstrip().startswith(">"):
            continue
        if _PASTE_INTRO.search(line):
            kept.append(line)
            break
        kept.append(line)
    typed = "\n".join(kept)
    if len(prompt) > TYPED_CHARS:
        typed = re.split(r"\n\s*\n", typed.strip(), maxsplit=1)[0]
    return typed


def standing_sentences(prompt: str) -> list[str]:
    """The sentences of a prompt that set a standing rule in the user's own words (whole sentences). A sentence
    that only points back at the rule ("Remember this as a guideline!") is joined to the sentence before it."""
    out = []
    typed = _QUOTED.sub(" ", typed_text(prompt))
    for line in typed.split("\n"):
        said = [s.strip(" -*") for s in sentences(line)]
        for index, sentence in enumerate(said):
            words = len(sentence.split())
            if not MIN_WORDS <= words <= MAX_WORDS or _QUESTION.search(sentence):
                continue
            if _POINTING.search(sentence) and index:
                before = said[index - 1]
                joined = f"{before} {sentence}"
                out = [s for s in out if s != before] + [joined] if len(joined.split()) <= 2 * MAX_WORDS else out
            elif _DIRECTIVE.search(sentence) or _RULE_INSIDE.search(sentence):
                out.append(sentence)
    return out


# a sentence that makes the one before it a rule, pointing back at it ("remember this as a guideline")
_POINTING = re.compile(r"\b(?:remember (?:this|that)|keep (?:this|that) in mind|(?:this|that) is a rule|"
                       r"merk (?:dir|es dir) (?:das|dies)|behalte (?:das|dies)|retiens (?:ça|cela)|recuerda esto)\b",
                       re.IGNORECASE)


def admission(prompt: str, reply: str) -> list[str]:
    """When a short prompt drew an admission of a mistake from the agent, the whole sentences of the reply that
    say what it was about (up to two, narration left out); [] otherwise."""
    if len(prompt) > CORRECTION_PROMPT_CHARS or len(prompt.split()) < 4 or not _ADMISSION.match(reply):
        return []
    said = []
    for sentence in sentences(reply.split("\n\n")[0]):
        sentence = _ADMISSION.sub("", sentence).lstrip(" !.,-—:")
        if sentence and not is_narration(sentence) and len(sentence.split()) >= 3 and not sentence.endswith(":"):
            said.append(sentence[0].upper() + sentence[1:])
    if not any(_AT_FAULT.search(s) for s in said[:2]):
        return []  # the agent agreed with feedback, it did not admit a mistake
    return said[:2]


# the agent saying what it did wrong: a first person with a should / was / made / missed ...
_AT_FAULT = re.compile(r"\b(?:i (?:should(?:n'?t| not| have)?|was|made|missed|overlooked|forgot|misread|"
                       r"misunderstood|described|didn'?t)|my (?:mistake|bad|fault|error)|ich (?:sollte|hätte|war|"
                       r"hab|habe)|mein fehler|j'aurais|je n'aurais|debí|no debí)\b", re.IGNORECASE)


_OPTION = re.compile(r"^\s*(?:\*\*)?(?:option\s+)?(\d+|[A-Ha-h])[.):]\s+(?:\*\*)?(.+)$", re.MULTILINE | re.IGNORECASE)
_CHOICE = re.compile(r"^\W*(?:option\s+)?(\d+|[A-Ha-h])\W*$", re.IGNORECASE)
_AGREE = re.compile(r"^\W*(?:y|yes|yep|yeah|ok|okay|sure|do it|go|go ahead|sounds good|ja|oui|sí|si)\b", re.IGNORECASE)
_CHOOSING = re.compile(
    r"\b(?:go with|let'?s (?:go with|use|do|keep)|use|make it|keep|stick with|switch to|prefer|instead|is fine|"
    r"sounds good|option \d|nimm|nehmen wir|lass uns|verwende|mach es)\b", re.IGNORECASE)
DECISION_PROMPT_CHARS = 240
_GO_ON = re.compile(r"^\W*(?:continue|go on|proceed|keep going|weiter|mach weiter|continuer|continúa)\W*$", re.I)
# a question that asks for a check, not a choice ("Does this look right so far?")
_CHECKING = re.compile(r"look (?:right|good|ok)|sound (?:right|good)|make sense|did you (?:hear|see)|hast du das|"
                       r"ready to (?:proceed|go|start)|shall i (?:proceed|continue)|soll ich (?:weiter|fortfahren)",
                       re.I)


def asked_question(reply: str) -> str:
    """The question the agent's reply ends on ("Which approach do you prefer?"), whole; '' when it asks none."""
    tail = [line for line in reply.strip().split("\n") if line.strip()][-6:]
    for line in reversed(tail):
        for sentence in reversed(sentences(line)):
            if sentence.rstrip("*_ ").endswith("?") and words(sentence) >= 3:
                return sentence.strip("*_ ")
    return ""


def decision(reply: str, prompt: str) -> tuple[str, str] | None:
    """When the user answered a question or a choice the agent put to them, (what was asked, what the user chose),
    the choice in the user's words or as the option it picked; None otherwise (a new request, a question back)."""
    typed = " ".join(prompt.split())
    if not typed or len(typed) > DECISION_PROMPT_CHARS or _QUESTION.search(typed) or typed.startswith(("/", "[")) \
            or _GO_ON.match(typed):
        return None
    question = asked_question(reply)
    options = {m.group(1).lower(): plain(m.group(2)).strip(" *") for m in _OPTION.finditer(reply)}
    if not question and len(options) < 2:
        return None
    choice = _CHOICE.match(typed)
    if choice and choice.group(1).lower() in options:
        return question, options[choice.group(1).lower()]
    if _AGREE.match(typed) and words(typed) <= 3:
        agreed = question and names(question) and not _CHECKING.search(question)
        return (question, typed) if agreed else None
    if _CHOOSING.search(typed) and (question or options):
        return question, typed
    return None
