// The openenv-mcp page: play a sim episode through forms built from each tool's input schema,
// or step through recorded episodes. Plain script, no build step, nothing loaded from elsewhere.
"use strict";

const mode = document.body.dataset.mode;
const $ = (id) => document.getElementById(id);
let episodeId = null;
let replaySteps = [];
let cursor = 0;

function token() { return sessionStorage.getItem("openenv-token") || ""; }

async function api(method, path, body, episode) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (episode) headers["X-Episode-Id"] = episode;
  if (token()) headers["Authorization"] = "Bearer " + token();
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await response.json(); } catch (_) { data = null; }
  if (response.status === 401) $("token-box").hidden = false;
  if (!response.ok) {
    const message = data && data.error ? data.error.message : response.status + " " + response.statusText;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return data;
}

function notice(message) {
  $("notice").textContent = message || "";
  $("notice").hidden = !message;
}

function element(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

// ---- JSON Schema -> form ------------------------------------------------------------------------

function resolve(schema, root) {
  if (schema && schema.$ref) {
    const name = schema.$ref.split("/").pop();
    return resolve((root.$defs || root.definitions || {})[name] || {}, root);
  }
  return schema || {};
}

function kindOf(schema, root) {
  schema = resolve(schema, root);
  if (schema.anyOf) {
    const options = schema.anyOf.map((s) => resolve(s, root)).filter((s) => s.type !== "null");
    if (options.length === 1) return { ...kindOf(options[0], root), nullable: true };
    return { type: "json", schema, nullable: schema.anyOf.length > options.length };
  }
  if (schema.enum) return { type: "enum", values: schema.enum, schema };
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (["string", "integer", "number", "boolean"].includes(type)) return { type, schema };
  return { type: "json", schema };
}

function fieldFor(tool, name, property, required, root) {
  const kind = kindOf(property, root);
  const id = `arg-${tool}-${name}`;
  let input;
  if (kind.type === "boolean") {
    input = element("input", { type: "checkbox", id });
    input.checked = property.default === true;
  } else if (kind.type === "enum") {
    input = element("select", { id });
    if (!required) input.append(element("option", { value: "", textContent: "(not set)" }));
    for (const value of kind.values) input.append(element("option", { value: JSON.stringify(value), textContent: String(value) }));
    if (property.default !== undefined && property.default !== null) input.value = JSON.stringify(property.default);
  } else if (kind.type === "integer" || kind.type === "number") {
    input = element("input", { type: "number", id, step: kind.type === "integer" ? "1" : "any" });
    if (property.default !== undefined && property.default !== null) input.value = property.default;
  } else if (kind.type === "string" && !((kind.schema.maxLength || 0) > 200)) {
    input = element("input", { type: "text", id });
    if (typeof property.default === "string") input.value = property.default;
  } else {
    input = element("textarea", { id, placeholder: kind.type === "json" ? "JSON" : "" });
    if (kind.type === "json" && property.default !== undefined && property.default !== null) {
      input.value = JSON.stringify(property.default);
    } else if (typeof property.default === "string") input.value = property.default;
  }
  input.dataset.kind = kind.type;
  input.dataset.name = name;
  input.dataset.required = required ? "1" : "";
  const help = property.description || resolve(property, root).description || "";
  return element("div", { class: "field" },
    element("label", { htmlFor: id },
      element("span", { class: "name", textContent: name + (required ? " *" : "") }), " ", input),
    help ? element("div", { class: "help", textContent: help }) : null);
}

function readArguments(form) {
  const args = {};
  for (const input of form.querySelectorAll("[data-name]")) {
    const { name, kind, required } = input.dataset;
    if (kind === "boolean") { args[name] = input.checked; continue; }
    const raw = input.value;
    if (raw === "" && !required) continue;
    if (kind === "integer") args[name] = parseInt(raw, 10);
    else if (kind === "number") args[name] = parseFloat(raw);
    else if (kind === "enum") args[name] = raw === "" ? null : JSON.parse(raw);
    else if (kind === "json") {
      try { args[name] = JSON.parse(raw); } catch (_) { throw new Error(`${name}: not valid JSON`); }
    } else args[name] = raw;
  }
  return args;
}

function renderTool(tool) {
  const schema = tool.inputSchema || {};
  const required = new Set(schema.required || []);
  const form = element("form", { "data-tool": tool.name });
  for (const [name, property] of Object.entries(schema.properties || {})) {
    form.append(fieldFor(tool.name, name, property, required.has(name), schema));
  }
  const button = element("button", { type: "submit", textContent: "Call " + tool.name, disabled: true });
  button.classList.add("call");
  form.append(button);
  form.addEventListener("submit", (event) => { event.preventDefault(); callTool(tool.name, form); });
  const title = tool.title ? `${tool.title} (${tool.name})` : tool.name;
  return element("details", { class: "tool", id: "tool-" + tool.name },
    element("summary", { textContent: title }),
    element("div", { class: "hint", textContent: tool.description || "" }),
    form);
}

// ---- observations -------------------------------------------------------------------------------

function renderBlocks(observation) {
  const box = element("div", { class: observation.is_error ? "observation error" : "observation" });
  for (const block of observation.content || []) {
    if (block.type === "image") box.append(element("img", { src: `data:${block.mimeType};base64,${block.data}`, alt: "screenshot" }));
    else if (block.type === "text") box.append(element("pre", { textContent: block.text }));
    else box.append(element("pre", { textContent: JSON.stringify(block) }));
  }
  return box;
}

function logStep(index, tool, args, observation, reward, done) {
  const item = element("li", { "data-step": String(index) },
    element("div", { class: "call", textContent: `${tool}(${JSON.stringify(args)})` }),
    renderBlocks(observation),
    element("div", { class: "reward", textContent: `reward ${reward}${done ? " · done" : ""}` }));
  $("log").append(item);
  return item;
}

function logError(tool, args, message) {
  $("log").append(element("li", { class: "error" },
    element("div", { class: "call", textContent: `${tool}(${JSON.stringify(args)})` }),
    element("div", { class: "refused", textContent: "refused: " + message })));
}

// ---- play ---------------------------------------------------------------------------------------

async function refreshState() {
  if (!episodeId) { $("state").textContent = "No episode: pick a task and Reset."; return; }
  const state = await api("GET", "/state", undefined, episodeId);
  $("state").textContent = `Episode ${state.episode_id.slice(0, 8)} · task ${state.task_id} · step ${state.step_count}/${state.max_steps}` +
    ` · total reward ${state.total_reward}` + (state.done ? " · done" : "");
  $("state").dataset.totalReward = String(state.total_reward);
  $("state").dataset.done = String(state.done);
  for (const button of document.querySelectorAll("button.call")) button.disabled = state.done;
}

async function reset() {
  notice("");
  const body = { seed: parseInt($("seed").value || "0", 10) };
  if ($("task").value) body.task_id = $("task").value;
  try {
    if (episodeId) await api("DELETE", `/episodes/${episodeId}`).catch(() => null);
    const first = await api("POST", "/reset", body);
    episodeId = first.episode_id;
    $("prompt").textContent = (first.observation.content || []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
    $("log").replaceChildren();
    $("close").disabled = false;
    await refreshState();
  } catch (error) { notice(error.message); }
}

async function callTool(tool, form) {
  notice("");
  let args;
  try { args = readArguments(form); } catch (error) { notice(error.message); return; }
  try {
    const result = await api("POST", "/step", { action: { tool, arguments: args } }, episodeId);
    logStep(result.info.step_count, tool, args, result.observation, result.reward, result.done);
  } catch (error) {
    logError(tool, args, error.message);
  }
  await refreshState().catch((error) => notice(error.message));
}

async function closeEpisode() {
  if (!episodeId) return;
  await api("DELETE", `/episodes/${episodeId}`).catch(() => null);
  episodeId = null;
  $("close").disabled = true;
  for (const button of document.querySelectorAll("button.call")) button.disabled = true;
  await refreshState();
}

// The task picker asks the server for one page of the tasks that match (thousands never reach the page at once).
const TASK_PAGE = 100;
let listing = 0;

async function listTasks() {
  const query = new URLSearchParams({ limit: String(TASK_PAGE) });
  if ($("task-split").value) query.set("split", $("task-split").value);
  if ($("task-difficulty").value) query.set("difficulty", $("task-difficulty").value);
  if ($("task-search").value.trim()) query.set("q", $("task-search").value.trim());
  const mine = ++listing;
  const listed = await api("GET", "/tasks?" + query);
  if (mine !== listing) return listed;  // a newer search is on its way: it fills the list
  const chosen = $("task").value;
  $("task").replaceChildren(element("option", { value: "", textContent: "(drawn by the seed)" }),
    ...listed.tasks.map((task) => element("option", {
      value: task.id, title: task.prompt,
      textContent: `${task.id} · ${task.split}${task.difficulty ? " · " + task.difficulty : ""}: ${task.prompt.slice(0, 70)}`,
    })));
  $("task").value = listed.tasks.some((task) => task.id === chosen) ? chosen : "";
  $("task-count").textContent = listed.total > listed.tasks.length
    ? `showing ${listed.tasks.length} of ${listed.total} matching tasks: narrow the search to see others`
    : `${listed.total} matching task${listed.total === 1 ? "" : "s"}`;
  $("task-count").dataset.total = String(listed.total);
  return listed;
}

async function startPlay() {
  $("play").hidden = false;
  const info = await api("GET", "/web/tools");
  $("title").textContent = `openenv-mcp · ${info.server} (sim)`;
  $("description").textContent = info.description;
  document.title = `${info.server} · openenv-mcp`;
  const first = await listTasks();
  for (const [filter, counts] of [["task-split", first.splits], ["task-difficulty", first.difficulties]]) {
    for (const [name, count] of Object.entries(counts || {})) $(filter).append(element("option", { value: name, textContent: `${name} (${count})` }));
  }
  let typing = null;
  $("task-search").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(() => listTasks().catch((error) => notice(error.message)), 200); });
  for (const filter of ["task-split", "task-difficulty"]) $(filter).addEventListener("change", () => listTasks().catch((error) => notice(error.message)));
  $("tools").replaceChildren(...info.tools.map(renderTool));
  $("reset").addEventListener("click", reset);
  $("close").addEventListener("click", closeEpisode);
  await refreshState();
}

// ---- replay -------------------------------------------------------------------------------------

function show(index) {
  cursor = Math.max(0, Math.min(index, replaySteps.length - 1));
  let total = 0;
  for (const item of $("log").children) {
    const step = parseInt(item.dataset.step, 10);
    item.hidden = step > cursor + 1;
    item.classList.toggle("current", step === cursor + 1);
    if (step <= cursor + 1) total += replaySteps[step - 1].reward;
  }
  const current = $("log").querySelector("li.current");
  if (current) current.scrollIntoView({ block: "nearest" });
  $("position").textContent = `step ${cursor + 1} of ${replaySteps.length} · reward so far ${Math.round(total * 1000) / 1000}`;
}

async function openEpisode(id) {
  const { episode, steps } = await api("GET", `/web/replay/episodes/${encodeURIComponent(id)}`);
  replaySteps = steps;
  $("player").hidden = false;
  $("replay-title").textContent = `${episode.server} · ${episode.task_id} · seed ${episode.seed} · reward ${episode.total_reward}`;
  $("replay-prompt").textContent = episode.prompt;
  $("log").replaceChildren();
  steps.forEach((step, i) => logStep(i + 1, step.tool, step.arguments,
    { content: step.content, is_error: step.is_error }, step.reward, step.done));
  show(0);
}

async function startReplay() {
  $("replay").hidden = false;
  $("title").textContent = "openenv-mcp · recorded episodes";
  const { store, episodes } = await api("GET", "/web/replay/episodes");
  $("description").textContent = `${episodes.length} episodes in ${store}`;
  $("episodes").replaceChildren(...episodes.map((e) => element("option", {
    value: e.id, textContent: `${e.server} · ${e.task_id} · seed ${e.seed} · ${e.step_count} steps · reward ${e.total_reward}`,
  })));
  $("episodes").addEventListener("change", () => openEpisode($("episodes").value).catch((error) => notice(error.message)));
  $("first").addEventListener("click", () => show(0));
  $("prev").addEventListener("click", () => show(cursor - 1));
  $("next").addEventListener("click", () => show(cursor + 1));
  $("last").addEventListener("click", () => show(replaySteps.length - 1));
}

$("token-box").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem("openenv-token", $("token").value.trim());
  location.reload();
});

(mode === "replay" ? startReplay() : startPlay()).catch((error) => notice(error.message));
