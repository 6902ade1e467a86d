// agentmem viewer: live updates. Polls /api/changes and adds what is new to the page without a reload.
// Every text goes in through textContent (never innerHTML): captured text is attacker controlled.
"use strict";
(function () {
  const body = document.body;
  const live = body.dataset.live;
  const root = body.dataset.root || "";  // this run's path: every address of the viewer starts with it
  if (!live) return;
  let observation = Number(body.dataset.observation || 0);
  let memory = Number(body.dataset.memory || 0);
  const status = document.getElementById("live-status");
  let added = 0;

  function cell(row, content) {
    const td = document.createElement("td");
    if (content instanceof Node) td.appendChild(content); else td.textContent = content;
    row.appendChild(td);
  }

  function link(path, text) {
    const a = document.createElement("a");
    a.href = path;
    a.textContent = text;
    return a;
  }

  function addMemory(m) {
    const table = document.getElementById("memory-list");
    if (!table) return;
    const tiers = (table.dataset.tiers || "").split(" ").filter(Boolean);
    if (tiers.length && !tiers.includes(m.tier)) return; // the page's filters: raw events stay off the default list
    if (table.dataset.type && m.type !== table.dataset.type) return;
    if (table.dataset.project && m.project !== null && m.project !== table.dataset.project) return;
    const list = table.querySelector("tbody");
    const row = document.createElement("tr");
    row.className = "new";
    row.dataset.id = m.id;
    cell(row, link(root + "/memory/" + encodeURIComponent(m.id), m.title || m.id));
    cell(row, m.type + " · " + m.tier);
    cell(row, m.project === null ? "global" : m.project.replace(/\/+$/, "").split("/").pop());
    cell(row, m.source);
    cell(row, Number(m.confidence).toFixed(2));
    cell(row, m.priority);
    cell(row, m.quarantined ? "quarantined" : "");
    cell(row, "just now");
    list.insertBefore(row, list.firstChild);
    added += 1;
  }

  function addObservation(o) {
    const list = document.getElementById("events");
    if (!list) return;
    const item = document.createElement("li");
    item.className = "event new " + (o.event === "prompt" ? "prompt" : "");
    const kind = document.createElement("span");
    kind.className = "kind";
    kind.textContent = o.event + (o.tool ? " " + o.tool : "");
    item.appendChild(kind);
    item.appendChild(document.createTextNode(o.prompt || o.title || "(" + o.status + ")"));
    list.appendChild(item);
    added += 1;
  }

  function bump(row, name) {
    const counter = row.querySelector("span." + name);
    if (counter) counter.textContent = String(Number(counter.textContent || 0) + 1);
  }

  function newSession(o) {
    const row = document.createElement("tr");
    row.className = "new";
    row.dataset.session = o.session_id;
    cell(row, link(root + "/session/" + encodeURIComponent(o.session_id), o.session_id.slice(0, 18)));
    cell(row, o.project === null ? "global" : o.project.replace(/\/+$/, "").split("/").pop());
    cell(row, o.client || "");
    cell(row, "just now");
    cell(row, "active");
    const captured = document.createElement("td");
    for (const [name, label] of [["prompts", " prompts, "], ["events", " events"]]) {
      const counter = document.createElement("span");
      counter.className = name;
      counter.textContent = "0";
      captured.appendChild(counter);
      captured.appendChild(document.createTextNode(label));
    }
    row.appendChild(captured);
    cell(row, "not summarised yet");
    return row;
  }

  function addToSessions(o) {
    const table = document.getElementById("sessions");
    if (!table) return;
    const wanted = table.dataset.project;
    if (wanted && o.project !== wanted) return;
    const body = table.querySelector("tbody");
    let row = Array.from(body.rows).find((r) => r.dataset.session === o.session_id);
    if (!row) {
      row = newSession(o);
      added += 1;
    }
    body.insertBefore(row, body.firstChild); // latest activity first, as the page orders them
    bump(row, "events");
    if (o.event === "prompt") bump(row, "prompts");
  }

  async function poll() {
    const query = new URLSearchParams({ observation: String(observation), memory: String(memory) });
    if (live.startsWith("session:")) query.set("session", live.slice("session:".length));
    try {
      const answer = await fetch(root + "/api/changes?" + query.toString(), { credentials: "same-origin" });
      if (answer.ok) {
        const data = await answer.json();
        for (const o of data.observations) {
          observation = Math.max(observation, o.id);
          if (live.startsWith("session:")) addObservation(o);
          if (live === "sessions") addToSessions(o);
        }
        for (const m of data.memories) {
          memory = Math.max(memory, m.mark);
          if (live === "memories") addMemory(m);
        }
        if (status) status.textContent = added ? "live: " + added + " new since this page loaded" : "live";
      }
    } catch (err) {
      if (status) status.textContent = "live updates paused (the viewer stopped?)";
    }
    window.setTimeout(poll, 1500);
  }
  window.setTimeout(poll, 1500);
})();
