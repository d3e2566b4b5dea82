// The playground: a client of condense's API and nothing else. Every number
// on the page is a value from /v1/tokens, /v1/verdict or /v1/compress; the
// page only decides how to show them (and which messages form a tool unit,
// which is structure, not a count).
'use strict';

// Profile fields a person tunes most, as editable overrides (`config`).
const OVERRIDES = [
  ['max_messages_before_summary', 'N: messages before a summary'],
  ['max_tokens_before_summary', 'K: tokens before a summary'],
  ['min_recent_messages', 'Newest messages kept'],
  ['response_reserve', 'Reply reserve (tokens)'],
  ['max_summary_tokens', 'Summary at most (tokens)'],
  ['context_window', 'Context window (tokens)'],
  ['max_iterations_before_summary', 'Iterations before a summary'],
];
// What a profile field the profile leaves out means.
const ABSENT = { context_window: 'the model’s', max_iterations_before_summary: 'off' };
const PREVIEW_CHARS = 160;
const FULL_CHARS = 20000;

const $ = (id) => document.getElementById(id);
const fmt = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : String(n));
let profiles = {};
let generation = 0;
let described = false;

// A service with API keys asks for one (401): the page then shows a key
// field and sends the key as `Authorization: Bearer`. It is kept for this
// tab only (sessionStorage), so a reload or an ?example= link keeps it and
// closing the tab forgets it.
const KEY = 'condense-api-key';
const apiKey = () => sessionStorage.getItem(KEY) || '';

/** An element with attributes (`text` sets its text) and children. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = value;
    else if (key === 'class') node.className = value;
    else node.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

/** A number from the API, shown with separators; `id` lets tests find it. */
const num = (id, value) => el('strong', { id, class: 'num', text: fmt(value) });

class Problem extends Error {
  constructor(problem) {
    super(problem.detail || problem.title || 'error');
    this.problem = problem;
  }
}

class FieldError extends Error {
  constructor(field, message) {
    super(message);
    this.field = field;
  }
}

async function api(method, path, body) {
  const headers = body === undefined ? {} : { 'content-type': 'application/json' };
  if (apiKey()) headers.authorization = `Bearer ${apiKey()}`;
  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new FieldError('general', `The service did not answer (${e.message}).`);
  }
  const type = res.headers.get('content-type') || '';
  const data = type.includes('json') ? await res.json() : { detail: await res.text() };
  if (!res.ok) throw new Problem({ status: res.status, ...data });
  return data;
}

// ------------------------------------------------------------- errors

function clearErrors() {
  for (const slot of document.querySelectorAll('.error')) {
    slot.hidden = true;
    slot.textContent = '';
  }
  for (const field of document.querySelectorAll('[aria-invalid]')) field.removeAttribute('aria-invalid');
}

/** The form field an API error pointer is about. */
function fieldOf(pointer) {
  const [, head, name] = (pointer || '').split('/');
  if (head === 'config' && OVERRIDES.some(([key]) => key === name)) return `config-${name}`;
  if (['messages', 'system', 'tools', 'format'].includes(head)) return 'thread';
  if (head === 'model' || head === 'encoding') return 'model';
  if (head === 'profile') return 'profile';
  if (head === 'summarizer' || head === 'force') return 'strategy';
  return 'general';
}

/** A 401: show the key field, and say what the service said. */
function askForKey(problem) {
  $('key-field').hidden = false;
  showError('key', apiKey()
    ? `The service did not accept this key: ${problem.detail || ''}`
    : `This service needs an API key: enter it, then press Analyse. (${problem.detail || ''})`);
  $('api-key').focus();
}

/** The key typed in the field (if shown) becomes the one the page sends. */
function takeKey() {
  if ($('key-field').hidden) return;
  const typed = $('api-key').value.trim();
  if (typed) sessionStorage.setItem(KEY, typed);
  else sessionStorage.removeItem(KEY);
}

function showError(field, message) {
  const slot = $(`error-${field}`) || $('error-general');
  if ([...slot.childNodes].some((n) => n.textContent === message)) return;
  slot.append(el('span', { text: message }));
  slot.hidden = false;
  const control = $(field);
  if (control) control.setAttribute('aria-invalid', 'true');
}

function showFailure(error) {
  if (error instanceof FieldError) return showError(error.field, error.message);
  if (!(error instanceof Problem)) return showError('general', `Unexpected: ${error.message}`);
  const { problem } = error;
  if (problem.status === 401) return askForKey(problem);
  if (Array.isArray(problem.errors) && problem.errors.length) {
    for (const e of problem.errors) {
      const field = fieldOf(e.pointer);
      showError(field, field === 'thread' || field === 'general' ? `${e.pointer}: ${e.message}` : e.message);
    }
  } else {
    showError('general', `${problem.title || 'Error'} (${problem.status}): ${problem.detail || ''}`);
  }
}

function setStatus(state, text) {
  const status = $('status');
  status.dataset.state = state;
  status.textContent = text;
  $('analyse').disabled = state === 'busy';
}

// -------------------------------------------------------------- input

/** The thread in the textarea, as the API's request fields. */
function readThread() {
  const text = $('thread').value.trim();
  if (!text) throw new FieldError('thread', 'Paste a thread first, or choose an example.');
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new FieldError('thread', `This is not valid JSON: ${e.message}`);
  }
  if (Array.isArray(value)) value = { messages: value };
  if (value === null || typeof value !== 'object' || !('messages' in value)) {
    throw new FieldError('thread', 'Expected an object with "messages" (a provider request body), or an array of messages.');
  }
  const thread = { messages: value.messages };
  for (const key of ['system', 'tools', 'format']) {
    if (value[key] !== undefined && value[key] !== null) thread[key] = value[key];
  }
  const model = $('model').value || value.model;
  if (model !== undefined && model !== null) thread.model = model;
  return thread;
}

/** The three requests: the same thread, decided and compressed with the form's settings. */
function requests(thread) {
  const config = {};
  for (const [key] of OVERRIDES) {
    const raw = $(`config-${key}`).value.trim();
    // Anything that is not a plain integer goes as typed: the API names what is wrong with it.
    if (raw !== '') config[key] = /^-?\d+$/.test(raw) ? Number(raw) : raw;
  }
  const decide = { ...thread };
  if ($('profile').value) decide.profile = $('profile').value;
  if (Object.keys(config).length) decide.config = config;
  return {
    tokens: thread,
    verdict: decide,
    compress: { ...decide, summarizer: { strategy: $('strategy').value }, force: $('force').checked },
  };
}

async function analyse() {
  const mine = ++generation;
  clearErrors();
  let reqs;
  try {
    reqs = requests(readThread());
  } catch (e) {
    showFailure(e);
    showResults(false);
    setStatus('error', 'Fix the highlighted field.');
    return;
  }
  setStatus('busy', 'Asking the service…');
  const settled = await Promise.allSettled([
    api('POST', '/v1/tokens', reqs.tokens),
    api('POST', '/v1/verdict', reqs.verdict),
    api('POST', '/v1/compress', reqs.compress),
  ]);
  if (mine !== generation) return;
  const failures = settled.filter((s) => s.status === 'rejected');
  if (failures.length) {
    failures.forEach((f) => showFailure(f.reason));
    showResults(false); // what is shown must be this input's
    setStatus('error', 'The service answered with an error: see the highlighted field.');
    return;
  }
  const [tokens, verdict, compress] = settled.map((s) => s.value);
  let after = tokens;
  if (compress.compressed) {
    try {
      after = await api('POST', '/v1/tokens', {
        messages: compress.messages,
        system: compress.system,
        tools: reqs.tokens.tools,
        format: compress.format,
        model: reqs.tokens.model,
      });
    } catch (e) {
      after = null;
      showFailure(e);
    }
  }
  if (mine !== generation) return;
  render(reqs.tokens, tokens, verdict, compress, after);
  setStatus('done', `Done: ${fmt(tokens.messages.length)} messages counted.`);
}

// ---------------------------------------------------------- structure

/** The readable text of a message, in either wire format. */
function textOf(message) {
  const parts = [];
  const content = message && message.content;
  if (typeof content === 'string') parts.push(content);
  else if (Array.isArray(content)) {
    for (const block of content) {
      if (typeof block === 'string') parts.push(block);
      else if (!block || typeof block !== 'object') continue;
      else if (block.type === 'text') parts.push(block.text);
      else if (block.type === 'tool_use') parts.push(`→ ${block.name}(${JSON.stringify(block.input)})`);
      else if (block.type === 'tool_result') parts.push(textOf({ content: block.content }));
      else parts.push(`[${block.type}]`);
    }
  }
  for (const call of (message && message.tool_calls) || []) {
    const fn = call.function || {};
    parts.push(`→ ${fn.name}(${fn.arguments || ''})`);
  }
  return parts.join('\n');
}

const blocks = (m) => (m && Array.isArray(m.content) ? m.content.filter((b) => b && typeof b === 'object') : []);
const makesCalls = (m) => (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) || blocks(m).some((b) => b.type === 'tool_use');
const holdsResults = (m) => m.role === 'tool' || (blocks(m).length > 0 && blocks(m).every((b) => b.type === 'tool_result'));

/** Per message: the tools it calls or answers, and the index of its tool unit's first message. */
function structure(messages) {
  const names = {};
  for (const m of messages) {
    for (const call of m.tool_calls || []) names[call.id] = call.function && call.function.name;
    for (const b of blocks(m)) if (b.type === 'tool_use') names[b.id] = b.name;
  }
  let open = null;
  return messages.map((m, i) => {
    const tools = [];
    for (const call of m.tool_calls || []) tools.push(call.function && call.function.name);
    if (m.tool_call_id) tools.push(names[m.tool_call_id]);
    for (const b of blocks(m)) {
      if (b.type === 'tool_use') tools.push(b.name);
      if (b.type === 'tool_result') tools.push(names[b.tool_use_id]);
    }
    if (makesCalls(m)) open = i;
    else if (!(holdsResults(m) && open !== null)) open = null;
    return { tools: [...new Set(tools.filter(Boolean))].join(', '), unit: open };
  });
}

/** A system or developer message condense did not write: never summarized. */
const isInstruction = (m) => ['system', 'developer'].includes(m.role) && !textOf(m).startsWith('[Context Summary');

const inSpan = (summary, i) => Boolean(summary) && i >= summary.first_message_idx && i <= summary.last_message_idx;

/** Inside the summarized span: summarized, unless an instruction (kept verbatim after the summary). */
const summarized = (messages, summary, i) => inSpan(summary, i) && !isInstruction(messages[i]);

/**
 * What the compression did to each request index: pinned, span, instruction
 * (a mid-conversation system message kept verbatim), dropped, truncated or kept.
 */
function fates(messages, compress) {
  const dropped = new Set(compress.messages_dropped);
  const truncated = new Set(compress.messages_truncated);
  const summary = compress.summary;
  let pinned = 0;
  while (pinned < messages.length && ['system', 'developer'].includes(messages[pinned].role)) pinned += 1;
  return messages.map((_, i) => {
    if (i < pinned) return 'pinned';
    if (isInstruction(messages[i])) return 'instruction';
    if (summarized(messages, summary, i)) return 'span';
    if (dropped.has(i)) return 'dropped';
    if (truncated.has(i)) return 'truncated';
    return 'recent';
  });
}

/** For each returned message, the request index it keeps (null for the summary message). */
function origins(messages, compress) {
  const summary = compress.summary;
  const dropped = new Set(compress.messages_dropped);
  const kept = messages
    .map((_, i) => i)
    .filter((i) => !dropped.has(i) && !summarized(messages, summary, i));
  if (kept.length + (summary ? 1 : 0) !== compress.messages.length) return null;
  const out = [...kept];
  if (summary) out.splice(kept.filter((i) => i < summary.first_message_idx).length, 0, null);
  return out;
}

// ------------------------------------------------------------ results

function bar(label, value, threshold, percent, ids) {
  const fill = el('span', { class: 'fill' });
  fill.style.width = `${Math.min(100, Math.max(0, percent))}%`;
  const track = el('span', {
    class: percent >= 100 ? 'track over' : 'track',
    role: 'progressbar',
    'aria-label': label,
    'aria-valuemin': '0',
    'aria-valuemax': '100',
    'aria-valuenow': String(Math.min(100, percent)),
  }, fill);
  const pct = el('span', { id: ids[2], class: 'num', text: `${percent}%` });
  return el('div', { class: 'bar' },
    el('span', { class: 'label', text: label }), track,
    el('span', { class: 'figures' }, num(ids[0], value), ' of ', num(ids[1], threshold), ' (', pct, ')'));
}

function renderVerdict(tokens, verdict) {
  const due = verdict.should_summarize;
  // replaceChildren writes a null as the text "null": the parts not shown are filtered out.
  $('verdict').replaceChildren(...[
    el('p', { class: due ? 'verdict due' : 'verdict' },
      el('strong', { id: 'v-should', text: due ? 'Summarize now' : 'Not due yet' }),
      due ? el('span', {}, ' (trigger: ', el('code', { id: 'v-trigger', text: verdict.trigger }), ')') : null,
      ` · profile ${verdict.profile} · model ${verdict.model} (${tokens.encoding}, ${verdict.format})`,
      verdict.exact ? null : el('span', { class: 'badge', title: 'The API marks this count as an estimate, not the provider’s exact figure.' }, 'estimate')),
    el('p', {}, num('v-total', verdict.total_tokens), ' tokens of a ', num('v-window', verdict.context_window),
      '-token window; ', num('v-available', verdict.available_tokens), ' left after them and the ',
      num('v-reserve', verdict.context_window - verdict.total_tokens - verdict.available_tokens), '-token reply reserve.'),
    bar('Messages since the last summary', verdict.messages_since_summary, verdict.messages_threshold,
      verdict.messages_percent, ['v-since', 'v-messages-threshold', 'v-messages-percent']),
    bar('Tokens', verdict.total_tokens, verdict.tokens_threshold, verdict.tokens_percent,
      ['v-tokens', 'v-tokens-threshold', 'v-tokens-percent']),
    verdict.iterations_threshold === null ? null
      : bar('Iterations since the last summary', verdict.iterations_since_summary, verdict.iterations_threshold,
        verdict.iterations_percent, ['v-iterations', 'v-iterations-threshold', 'v-iterations-percent']),
    verdict.last_summary ? el('p', {}, 'Last summary: ', num('v-last-summarized', verdict.last_summary.messages_summarized),
      ' messages in ', num('v-last-tokens', verdict.last_summary.tokens), ' tokens',
      verdict.last_summary.created_at ? `, written ${verdict.last_summary.created_at}.` : '.') : null,
  ].filter(Boolean));
}

function renderWarnings(verdict, compress, after) {
  const seen = new Set();
  const items = [];
  for (const w of [...verdict.warnings, ...compress.warnings, ...((after && after.warnings) || [])]) {
    if (seen.has(w)) continue;
    seen.add(w);
    items.push(el('li', { text: w }));
  }
  if (compress.degraded) {
    items.unshift(el('li', { class: 'degraded', id: 'x-degraded', text: 'Degraded: the summary is not what was asked for (the upstream LLM failed; a heuristic summary was used).' }));
  }
  $('warnings').replaceChildren(...items);
}

/**
 * What a message mostly carries, for the overview: it counts once, under the
 * first of these that fits (the API counts messages, not their blocks).
 */
function kindOf(m) {
  if (!m || ['system', 'developer'].includes(m.role)) return 'instructions';
  if (holdsResults(m)) return 'tool results';
  if (makesCalls(m)) return 'tool calls';
  if (m.reasoning_content || blocks(m).some((b) => ['thinking', 'redacted_thinking'].includes(b.type))) return 'thinking';
  return 'text';
}

/** One stacked bar of `parts` ([name, tokens], zeros left out) with its figures; ids `o-<group>-<name>`. */
function stack(group, title, parts, total) {
  const bar = el('span', { class: 'stack', role: 'img', 'aria-label': `Tokens by ${title}` });
  const figures = el('ul', { class: 'parts' });
  for (const [name, n] of parts.filter(([, n]) => n > 0)) {
    const slug = name.replace(/\s+/g, '-');
    const share = n / total < 0.0005 ? '<0.1%' : `${((100 * n) / total).toFixed(1)}%`;
    const segment = el('span', { class: `seg p-${slug}`, title: `${name}: ${fmt(n)} (${share})` });
    segment.style.width = `${(100 * n) / total}%`;
    bar.append(segment);
    figures.append(el('li', {}, el('span', { class: `swatch p-${slug}` }), `${name} `, num(`o-${group}-${slug}`, n), ` (${share})`));
  }
  return el('div', { class: 'stack-row' }, el('span', { class: 'label', text: `By ${title}` }), bar, figures);
}

/** Where the tokens go, at a glance: the thread's total by role and by kind. */
function renderOverview(thread, tokens) {
  const byRole = new Map();
  const byKind = new Map([['text', 0], ['tool calls', 0], ['tool results', 0], ['thinking', 0], ['instructions', 0]]);
  for (const m of tokens.messages) {
    byRole.set(m.role, (byRole.get(m.role) || 0) + m.tokens);
    const kind = kindOf(m.index === null ? null : thread.messages[m.index]);
    byKind.set(kind, byKind.get(kind) + m.tokens);
  }
  const extra = [['tool definitions', tokens.tools_tokens], ['reply priming', tokens.reply_priming_tokens]];
  const total = [...byRole.values()].reduce((a, b) => a + b, 0) + tokens.tools_tokens + tokens.reply_priming_tokens;
  $('overview').replaceChildren(
    el('p', {}, num('o-total', total), ' tokens in ', num('o-messages', tokens.messages.length),
      ' messages, their tool definitions and the reply priming.'),
    stack('role', 'role', [...byRole, ...extra], Math.max(1, total)),
    stack('kind', 'kind', [...byKind, ...extra], Math.max(1, total)),
    el('p', { class: 'note', text: 'By kind, a message counts once, under the first of: instructions, tool results, tool calls, thinking, text.' }));
  $('chart-title').textContent = `Per message (${fmt(tokens.messages.length)} rows; the list scrolls)`;
}

function renderChart(thread, tokens, compress) {
  const shape = structure(thread.messages);
  const fate = fates(thread.messages, compress);
  const max = Math.max(1, ...tokens.messages.map((m) => m.tokens));
  const rows = tokens.messages.map((m) => {
    const i = m.index;
    const kind = i === null ? 'pinned' : fate[i];
    const unit = i === null ? null : shape[i].unit;
    const next = i === null ? null : shape[i + 1];
    const place = unit === null ? '' : unit === i ? ' unit-start' : next && next.unit === unit ? ' unit-mid' : ' unit-end';
    const fill = el('span', { class: 'fill' });
    fill.style.width = `${(100 * m.tokens) / max}%`;
    return el('li', { class: `msg ${kind}${place}`, 'data-index': i === null ? 'system' : String(i) },
      el('span', { class: 'idx', text: i === null ? 'system' : `#${i}` }),
      el('span', { class: 'role', text: m.role }),
      el('span', { class: 'tool', text: i === null ? '' : shape[i].tools }),
      el('span', { class: 'track', 'aria-hidden': 'true' }, fill),
      el('span', { class: 'tokens num', text: fmt(m.tokens) }));
  });
  rows.push(el('li', { class: 'msg extra' }, el('span', { class: 'idx' }), el('span', { class: 'role', text: 'tools' }),
    el('span', { class: 'tool', text: 'tool definitions' }), el('span', { class: 'track' }),
    el('span', { id: 'c-tools', class: 'tokens num', text: fmt(tokens.tools_tokens) })));
  rows.push(el('li', { class: 'msg extra' }, el('span', { class: 'idx' }), el('span', { class: 'role', text: 'total' }),
    el('span', { class: 'tool', text: `incl. ${tokens.reply_priming_tokens} reply priming` }), el('span', { class: 'track' }),
    el('span', { id: 'c-total', class: 'tokens num', text: fmt(tokens.total_tokens) })));
  $('chart').replaceChildren(...rows);
}

/** A message of the thread; `label` names it (`#3`, or what a summary is). */
function messageItem(message, tokenCount, kind, label, tools) {
  const text = textOf(message);
  const details = el('details', {},
    el('summary', {},
      el('span', { class: 'idx', text: label }),
      el('span', { class: 'role', text: message.role }),
      tools ? el('span', { class: 'tool', text: tools }) : null,
      el('span', { class: 'tokens num', text: tokenCount === undefined ? '' : fmt(tokenCount) }),
      el('span', { class: 'preview', text: text.slice(0, PREVIEW_CHARS) })));
  // The full text is only built when opened: a large thread stays light.
  details.addEventListener('toggle', () => {
    if (details.open && details.children.length === 1) {
      const clipped = text.length > FULL_CHARS ? `${text.slice(0, FULL_CHARS)}\n… (${fmt(text.length - FULL_CHARS)} more characters)` : text;
      details.append(el('pre', { text: clipped }));
    }
  });
  return el('li', { class: `msg ${kind}` }, details);
}

function renderCompression(thread, tokens, compress, after) {
  const s = compress.summary;
  const facts = [
    el('p', {}, compress.compressed
      ? el('span', {}, el('strong', { id: 'x-compressed', text: 'Compressed' }), ' (', el('code', { id: 'x-reason', text: compress.reason }), '): ')
      : el('span', {}, el('strong', { id: 'x-compressed', text: 'Unchanged' }), ' (nothing is due; tick “Compress even when nothing is due” to see what a compression would keep): '),
    num('x-before', compress.tokens_before), ' → ', num('x-after', compress.tokens_after), ' tokens in a ',
    num('x-window', compress.context_window), '-token window.'),
  ];
  if (s) {
    facts.push(el('p', { id: 'x-summary' }, 'Summary ', el('strong', { id: 'x-summary-source', text: s.cached ? 'from the cache' : 'newly written' }),
      ': ', num('x-summary-tokens', s.token_count), ' tokens of text for ',
      num('x-summarized', s.messages_summarized), ' messages (#', fmt(s.first_message_idx), '–#', fmt(s.last_message_idx),
      `), strategy ${s.strategy}${s.model ? ` (${s.model})` : ''}.`));
  }
  if (compress.messages_dropped.length || compress.messages_truncated.length) {
    facts.push(el('p', {}, num('x-dropped', compress.messages_dropped.length), ' messages dropped, ',
      num('x-truncated', compress.messages_truncated.length), ' cut in the middle to fit.'));
  }
  const edit = (e) => {
    if (e.type === 'clear_tool_uses') return `Cleared ${fmt(e.cleared_tool_uses)} old tool results (${fmt(e.cleared_input_tokens)} tokens); ${fmt(e.kept_tool_uses)} tool uses kept intact.`;
    if (e.type === 'remove_stale_thinking') return `Removed the thinking of ${fmt(e.removed_thinking_turns)} kept turns (${fmt(e.cleared_input_tokens)} tokens): the new summary precedes them, and Anthropic binds thinking to its prefix.`;
    return `Cleared the thinking of ${fmt(e.cleared_thinking_turns)} older turns (${fmt(e.cleared_input_tokens)} tokens).`;
  };
  (compress.applied_edits || []).forEach((e) => facts.push(el('p', {}, edit(e))));
  const instructions = thread.messages.filter((m, i) => isInstruction(m) && inSpan(s, i)).length;
  if (instructions) {
    facts.push(el('p', { id: 'x-instructions' }, `${fmt(instructions)} system message(s) inside the summarized span kept verbatim after the summary, in their order.`));
  }
  if (compress.thinking_drop_block) {
    facts.push(el('p', { id: 'x-drop-block' }, 'Kept thinking follows a changed prefix: send this thread with Anthropic\'s drop_block (the proxy adds it).'));
  }
  if (compress.usage) {
    facts.push(el('p', {}, `Upstream: ${fmt(compress.usage.prompt_tokens)} prompt + ${fmt(compress.usage.completion_tokens)} completion tokens in ${compress.usage.calls} call(s), ${fmt(compress.usage.upstream_ms)} ms.`));
  }
  $('compression').replaceChildren(...facts);

  const shape = structure(thread.messages);
  const fate = fates(thread.messages, compress);
  const counted = new Map(tokens.messages.filter((m) => m.index !== null).map((m) => [m.index, m.tokens]));
  $('original').replaceChildren(...thread.messages.map((m, i) => messageItem(m, counted.get(i), fate[i], `#${i}`, shape[i].tools)));

  const from = compress.compressed ? origins(thread.messages, compress) : thread.messages.map((_, i) => i);
  const afterCounts = after ? new Map(after.messages.filter((m) => m.index !== null).map((m) => [m.index, m.tokens])) : new Map();
  const outShape = structure(compress.messages);
  $('compressed').replaceChildren(...compress.messages.map((m, j) => {
    const origin = from ? from[j] : undefined;
    let kind = 'recent';
    if (origin === null) kind = 'summary';
    else if (origin !== undefined) kind = fate[origin] === 'truncated' ? 'truncated' : fate[origin];
    const label = origin === null ? `summary, ${s.cached ? 'from the cache' : 'newly written'}` : `#${origin === undefined ? j : origin}`;
    return messageItem(m, afterCounts.get(j), kind, label, outShape[j].tools);
  }));
  const at = from ? from.indexOf(null) : -1;
  if (s && at >= 0 && afterCounts.has(at)) {
    $('x-summary').append(' As a message, with its header and framing: ', num('x-summary-message-tokens', afterCounts.get(at)), ' tokens.');
  }
}

function render(thread, tokens, verdict, compress, after) {
  renderVerdict(tokens, verdict);
  renderWarnings(verdict, compress, after);
  renderOverview(thread, tokens);
  renderChart(thread, tokens, compress);
  renderCompression(thread, tokens, compress, after);
  showResults(true);
}

/** The results, or in their place what the page is waiting for. */
function showResults(shown) {
  $('results').hidden = !shown;
  $('empty').hidden = shown;
}

// --------------------------------------------------------------- setup

function buildOverrides() {
  $('overrides').replaceChildren(...OVERRIDES.map(([key, label]) => el('div', { class: 'field' },
    el('label', { for: `config-${key}`, text: label }),
    el('input', { id: `config-${key}`, name: key, type: 'text', inputmode: 'numeric', autocomplete: 'off', 'aria-describedby': `error-config-${key}` }),
    el('p', { class: 'error', id: `error-config-${key}`, role: 'alert', hidden: true }))));
}

function showProfile() {
  const profile = profiles[$('profile').value] || {};
  for (const [key] of OVERRIDES) {
    $(`config-${key}`).placeholder = profile[key] === undefined ? ABSENT[key] || '' : String(profile[key]);
  }
}

async function loadExample(name) {
  clearErrors();
  setStatus('busy', `Loading ${name}…`);
  try {
    const res = await fetch(`/playground/examples/${encodeURIComponent(name)}`);
    if (!res.ok) throw new FieldError('example', `There is no example named “${name}”.`);
    $('thread').value = await res.text();
  } catch (e) {
    showFailure(e instanceof FieldError ? e : new FieldError('example', e.message));
    setStatus('error', 'The example could not be loaded.');
    return;
  }
  const url = new URL(window.location.href);
  url.searchParams.set('example', name);
  window.history.replaceState(null, '', url);
  await analyse();
}

async function loadFile(file) {
  $('thread').value = await file.text();
  await analyse();
}

/** The models, profiles and examples, once; false when the service refused. */
async function describe() {
  let catalog;
  try {
    catalog = await Promise.all([api('GET', '/v1/models'), api('GET', '/v1/profiles'), api('GET', '/playground/examples')]);
  } catch (e) {
    showFailure(e);
    setStatus('error', e instanceof Problem && e.problem.status === 401
      ? 'The service needs an API key.'
      : 'The service did not describe itself.');
    return false;
  }
  const [models, profileList, examples] = catalog;
  $('model').options[0].textContent = `(the thread’s, else ${models.default_model})`;
  for (const m of models.models) $('model').append(el('option', { value: m.prefix, text: `${m.prefix} (${m.encoding})` }));
  profiles = profileList.profiles;
  for (const name of Object.keys(profiles)) $('profile').append(el('option', { value: name, text: name, selected: name === 'default' }));
  showProfile();
  for (const x of examples.examples) {
    $('example').append(el('option', { value: x.name, text: `${x.name} (${fmt(Math.round(x.bytes / 1024))} KB)` }));
  }
  described = true;
  return true;
}

/** After the catalog: the example the address names, else the first one, so a first visit shows a verdict. */
async function start() {
  clearErrors();
  if (!(await describe())) return;
  const first = $('example').options[1];
  const wanted = new URLSearchParams(window.location.search).get('example') || (first && first.value);
  if (wanted) {
    $('example').value = wanted;
    await loadExample(wanted);
  } else {
    setStatus('idle', 'Choose an example or paste a thread.');
  }
}

// ------------------------------------------------------------- ledger

/** Every input token of a bill, however billed. */
const inputOf = (b) => b.input + b.cache_read + b.cache_write_5m + b.cache_write_1h;

/** A proxied conversation's ledger (`GET /v1/conversations/{id}`), read only. */
async function showLedger() {
  const slot = $('error-conversation');
  slot.hidden = true;
  slot.textContent = '';
  const view = $('ledger-view');
  view.replaceChildren();
  let ledger;
  try {
    ledger = await api('GET', `/v1/conversations/${encodeURIComponent($('conversation').value.trim())}`);
  } catch (e) {
    if (e instanceof Problem && e.problem.status === 401) return askForKey(e.problem);
    const p = e instanceof Problem ? e.problem : { title: 'Error', detail: e.message };
    slot.append(el('span', { text: `${p.title || 'Error'} (${p.status}): ${p.detail || ''}` }));
    slot.hidden = false;
    return;
  }
  const columns = ['When', 'Route', 'Sent', 'Forwarded', 'Input billed', 'Input without condense', 'Output', 'Why compressed'];
  const head = el('tr', {}, ...columns.map((text) => el('th', { scope: 'col', text })));
  const rows = ledger.turns.map((t, i) => el('tr', { 'data-turn': i },
    el('td', { text: t.at }),
    el('td', { text: t.route }),
    el('td', { class: 'num', text: fmt(t.sent_tokens ?? '–') }),
    el('td', { class: 'num', text: fmt(t.forwarded_tokens ?? '–') }),
    el('td', { class: 'num', text: fmt(inputOf(t.billed)) }),
    el('td', { class: 'num', text: fmt(inputOf(t.without_condense)) }),
    el('td', { class: 'num', text: fmt(t.billed.output) }),
    el('td', { text: t.reason || '–' })));
  const { totals } = ledger;
  const d = totals.difference.input_total;
  view.append(
    el('div', { class: 'scroll' }, el('table', { id: 'ledger-table', class: 'ledger' },
      el('thead', {}, head), el('tbody', {}, ...rows))),
    el('p', {},
      `${fmt(totals.turns)} turns: input `, num('l-billed', inputOf(totals.billed)),
      ' billed, ', num('l-without', inputOf(totals.without_condense)),
      ' without condense (', num('l-difference', d),
      d < 0 ? ' saved); summarizer ' : '); summarizer ',
      num('l-summary', totals.summary_call_tokens), ' tokens.'));
}

async function init() {
  buildOverrides();
  $('input').addEventListener('submit', (e) => {
    e.preventDefault();
    takeKey();
    if (!described) start();
    else analyse();
  });
  $('example').addEventListener('change', () => $('example').value && loadExample($('example').value));
  $('file').addEventListener('change', () => $('file').files[0] && loadFile($('file').files[0]));
  $('profile').addEventListener('change', showProfile);
  $('thread').addEventListener('dragover', (e) => e.preventDefault());
  $('thread').addEventListener('drop', (e) => {
    if (!e.dataTransfer.files.length) return;
    e.preventDefault();
    loadFile(e.dataTransfer.files[0]);
  });
  $('ledger-form').addEventListener('submit', (e) => {
    e.preventDefault();
    takeKey();
    showLedger();
  });
  if (apiKey()) $('api-key').value = apiKey();
  await start();
}

init();
