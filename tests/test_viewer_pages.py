"""Issue 37.10 and 37.15, the viewer as a user reads it, in the real Debian Chromium: the Sessions table keeps its
words whole at 1400 px, the search page opens on recent memories and example searches, the pages speak of search
in a user's words (the shared process and its pid only on Health), and the Memories page lists what search shows
(the raw captured prompts and tool calls on request). The home, the viewer and the browser are test_viewer.py's."""

from __future__ import annotations

import json
import re

from .test_viewer import _by, _cli, _cookie, _open, _request, _search_mode, browser, viewer, world  # noqa: F401

LONG_PROMPT = ("Refactor the checkout flow so that the payment gateway retries are idempotent and the order "
               "confirmation emails are sent exactly once, even when the provider's webhook arrives twice")

# each text node of the element, as the lines it is laid out on: a word broken in two spans two lines
SPLIT_WORDS = """
const broken = [];
for (const cell of document.querySelectorAll(arguments[0])) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.textContent.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const tops = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
      if (tops.size > 1) broken.push(match[0]);
    }
  }
}
return broken;
"""


def test_the_sessions_table_keeps_its_words_whole_at_1400_px(browser, viewer):  # noqa: F811
    env, repo = viewer["env"], viewer["repo"]
    for event, fields in (("SessionStart", {"source": "startup"}), ("UserPromptSubmit", {"prompt": LONG_PROMPT}),
                          ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "pnpm test:payments"},
                                           "tool_response": {"stdout": "31 passed", "stderr": ""}}),
                          ("Stop", {})):  # a session whose summary has a long title
        _cli(env, repo, "hook", event, stdin=json.dumps({"session_id": "viewer-session-long", "cwd": str(repo),
                                                         "hook_event_name": event, **fields}))
    _cli(env, repo, "worker", "--once")
    browser.set_window_size(1400, 900)
    try:
        _open(browser, viewer, "/sessions")
        assert browser.find_elements(*_by("#sessions tbody tr")), browser.find_element(*_by("main")).text
        assert browser.execute_script(SPLIT_WORDS, "#sessions th, #sessions td") == []
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= 1400, width  # and nothing runs off the page instead
    finally:
        browser.set_window_size(1280, 800)


def test_the_search_page_opens_on_recent_memories_and_examples(browser, viewer):  # noqa: F811
    _open(browser, viewer, "/search")
    recent = browser.find_elements(*_by("#recent a[href*='/memory/']"))
    assert recent and any("pnpm" in link.text for link in recent), browser.find_element(*_by("main")).text
    examples = browser.find_elements(*_by("#examples a[href*='/search?q=']"))
    assert len(examples) >= 2
    examples[0].click()
    assert browser.find_elements(*_by("#search-summary")), "an example runs a search"


def test_pages_speak_of_search_in_a_users_words(browser, viewer):  # noqa: F811
    assert _search_mode(viewer) == "hybrid"
    for path in ("/search", "/memories", "/sessions", "/lifecycle"):
        _open(browser, viewer, path)
        banner = browser.find_element(*_by("#mode")).text
        assert "pid" not in banner and "embedding process" not in banner and "BM25" not in banner, (path, banner)
    _open(browser, viewer, "/health")
    detail = browser.find_element(*_by("#mode")).text
    assert re.search(r"shared embedding process \(pid \d+\)", detail), detail


def test_the_memories_page_lists_what_search_shows(browser, viewer):  # noqa: F811
    _open(browser, viewer, "/memories")
    listed = browser.find_element(*_by("#memory-list")).text
    assert "pnpm" in listed and "Prompt:" not in listed and "· working" not in listed, listed
    assert "raw captured events" in browser.find_element(*_by("#raw-note")).text
    _open(browser, viewer, "/memories?tier=working")
    assert "Prompt: fix the checkout button" in browser.find_element(*_by("#memory-list")).text
    status, _, body = _request(viewer["port"], "GET", "/memories",
                               headers=_cookie(viewer["port"], viewer["token"]))
    assert status == 200 and 'data-tiers="episodic semantic procedural"' in body  # the live feed's filter too
