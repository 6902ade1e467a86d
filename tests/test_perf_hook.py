"""The hook's start-up path: what it imports, and the shortcuts redaction takes to stay cheap.

The shortcuts skip a rule without compiling it when the text cannot hold a match; these tests check, on the
secrets corpus and on ordinary text, that a skipped rule would have found nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentmem_mcp.capture import redact as redact_module
from agentmem_mcp.capture import secret_scan
from tests.secrets_corpus import ORDINARY_TEXTS, SECRET_CASES

REPO = Path(__file__).resolve().parent.parent


def _texts() -> list[str]:
    texts = [case.context for case in SECRET_CASES] + list(ORDINARY_TEXTS.values())
    return texts + [text.lower() for text in texts] + [text.upper() for text in texts]


def test_a_rule_skipped_for_lack_of_its_literals_would_have_matched_nothing():
    rules = [rule for rule in secret_scan._FORMAT_RULES + secret_scan._CONTEXT_RULES if rule.needs or rule.on_line]
    assert len(rules) >= 10
    matched = 0
    for text in _texts():
        low = secret_scan._lower(text)
        for rule in rules:
            subject = low if rule.lower else text
            matches = [m for m in secret_scan._regex(rule).finditer(subject)
                       if not rule.on_line or secret_scan._on_line(low, m.start(), rule.on_line)]
            matched += bool(matches)
            for m in matches:
                if rule.needs:
                    assert any(literal in m.group() for literal in rule.needs), (rule.kind, m.group())
                assert not rule.on_line or any(word in low for word in rule.on_line), (rule.kind, m.group())
    assert matched >= 20  # the corpus reaches these rules: the check above is not vacuous


def test_sensitive_keys_and_decoders_need_their_words():
    keys = ["password", "GITHUB_TOKEN", "clientSecret", "x-api-key", "db_pwd", "Cookie", "AWS_SECRET_ACCESS_KEY",
            "connection-string", "credentials", "authorization", "signing.key", "command", "description", "max_tokens"]
    for key in keys:
        norm = key.lower().replace(" ", "").replace("-", "").replace(".", "")
        full = redact_module._SENSITIVE_KEY.search(norm.replace("_", "")) or redact_module._SENSITIVE_KEY.search(norm)
        if full:
            assert any(word in norm for word in redact_module._SENSITIVE_KEY_WORDS), key
    assert redact_module.is_sensitive_key("GITHUB_TOKEN") and not redact_module.is_sensitive_key("command")
    for command in ("echo aGk= | base64 -d", "openssl enc -aes-256-cbc -d -in x", "gpg --decrypt f.gpg",
                    "sops -d s.yaml",
                    "age -d -i key.txt f.age", "xxd -r -p dump", "BASE64 --decode < f"):
        assert redact_module.decodes_secrets(command), command
        assert any(word in command.lower() for word in redact_module._DECODER_WORDS)
    assert not redact_module.decodes_secrets("pytest -q tests/test_api.py")


def _hook_imports(tmp_path: Path, event: str, payload: dict) -> set[str]:
    """The modules a real `agentmem hook` process has loaded when it exits (it writes them to a file)."""
    probe = tmp_path / "modules.json"
    code = ("import atexit, json, os, sys\n"
            "real_exit = os._exit\n"
            "def record(code):\n"
            f"    open({str(probe)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
            "    real_exit(code)\n"
            "os._exit = record\n"
            "from agentmem_mcp.cli.app import main\n"
            f"sys.argv = ['agentmem', 'hook', {event!r}]\n"
            "main()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env.update(AGENTMEM_HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO), AGENTMEM_HOOK_STARTS_PROCESS="0")
    done = subprocess.run([sys.executable, "-c", code], input=json.dumps(payload).encode(), env=env,
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return set(json.loads(probe.read_text()))


def test_post_tool_use_hook_loads_no_typing_no_toml_no_vectors_no_mcp(tmp_path):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    payload = {"session_id": "s1", "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": "Bash",
               "tool_input": {"command": "pytest -q"}, "tool_response": {"stdout": "3 passed", "stderr": ""}}
    modules = _hook_imports(tmp_path, "PostToolUse", payload)
    assert "agentmem_mcp.capture.observations" in modules  # it did record the event
    loaded = {name.split(".")[0] for name in modules}
    for heavy in ("typing", "tomllib", "sqlite_vec", "mcp", "fastembed", "onnxruntime", "numpy", "anthropic",
                  "dataclasses", "inspect", "hashlib", "logging", "tantivy"):
        assert heavy not in loaded, heavy


def _private_home(tmp_path: Path) -> Path:
    from agentmem_mcp.files import ensure_private_dir

    home = tmp_path / "home"
    ensure_private_dir(home)
    return home


def test_config_toml_is_read_once_then_from_its_cache_until_it_changes(tmp_path):
    import pytest

    from agentmem_mcp.config import CONFIG_CACHE, ConfigError, load_settings

    home = _private_home(tmp_path)
    config = home / "config.toml"
    config.write_text("prompt_budget_tokens = 123\nno_such_setting = 1\n")
    config.chmod(0o600)
    warnings: list[str] = []
    assert load_settings({"AGENTMEM_HOME": str(home)}, on_warning=warnings.append).prompt_budget_tokens == 123
    cache = home / CONFIG_CACHE
    assert cache.is_file() and (cache.stat().st_mode & 0o777) == 0o600
    assert json.loads(cache.read_text())["values"] == {"prompt_budget_tokens": 123, "no_such_setting": 1}
    warnings_again: list[str] = []
    assert load_settings({"AGENTMEM_HOME": str(home)}, on_warning=warnings_again.append).prompt_budget_tokens == 123
    assert warnings_again == warnings and "no_such_setting" in warnings[0]  # the cache warns as the file did

    config.write_text("prompt_budget_tokens = -5\n")  # a change is seen, and still checked
    with pytest.raises(ConfigError, match="prompt_budget_tokens"):
        load_settings({"AGENTMEM_HOME": str(home)})
    config.write_text("prompt_budget_tokens = 77\n")
    assert load_settings({"AGENTMEM_HOME": str(home)}).prompt_budget_tokens == 77

    # a cache someone else could have written is not believed: the file is parsed again
    cached = json.loads(cache.read_text())
    cached["values"]["prompt_budget_tokens"] = 5
    cache.write_text(json.dumps(cached))
    cache.chmod(0o666)
    assert load_settings({"AGENTMEM_HOME": str(home)}).prompt_budget_tokens == 77


def test_config_cache_is_not_written_into_a_folder_agentmem_does_not_own(tmp_path):
    from agentmem_mcp.config import CONFIG_CACHE, load_settings

    home = tmp_path / "someone-elses"
    home.mkdir(mode=0o700)
    (home / "config.toml").write_text("prompt_budget_tokens = 9\n")
    (home / "config.toml").chmod(0o600)
    assert load_settings({"AGENTMEM_HOME": str(home)}).prompt_budget_tokens == 9
    assert not (home / CONFIG_CACHE).exists()


def test_a_hook_with_a_config_file_does_not_import_tomllib_once_cached(tmp_path):
    home = _private_home(tmp_path)
    (home / "config.toml").write_text("max_output_chars = 5000\n")
    (home / "config.toml").chmod(0o600)
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    payload = {"session_id": "s1", "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "tool_response": {"stdout": "a\nb", "stderr": ""}}
    assert "tomllib" in _hook_imports(tmp_path, "PostToolUse", payload)  # the first one parses and caches
    assert "tomllib" not in _hook_imports(tmp_path, "PostToolUse", payload)
