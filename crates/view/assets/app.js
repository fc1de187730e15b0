// spillway view: the page. Cards come from /api/cards a page at a time;
// the document holds at most MAX_WINDOW of them. Every text is inserted as
// text (never as markup). Stable attributes for tests and tools:
// data-card, data-dispatch, data-notice, data-omitted, data-hit.
'use strict'

const PAGE = 50
const MAX_WINDOW = 200
const enc = new TextEncoder()
const dec = new TextDecoder()

const state = { sessions: [], session: 0, total: 0, lo: 0, hi: 0, loading: false, store: false }
const $ = (sel) => document.querySelector(sel)

function el (tag, attrs = {}, ...children) {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (k === 'class') e.className = v
    else if (k === 'text') e.textContent = v
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v)
    else e.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) e.append(c)
  return e
}

async function api (path) {
  const r = await fetch(path, { credentials: 'same-origin' })
  let body
  try { body = await r.json() } catch { body = { error: `${r.status} ${r.statusText}` } }
  if (!r.ok) throw new Error(body.error || `${r.status}`)
  return body
}

// ---- sessions -------------------------------------------------------------

async function loadSessions () {
  const s = await api('/api/sessions')
  state.sessions = s.sessions
  state.store = s.store
  const nav = $('#sessions')
  nav.replaceChildren(...(s.sessions.length > 1
    ? s.sessions.map((x) => el('button', { type: 'button', 'data-session': x.session, 'aria-current': x.session === state.session ? 'true' : 'false', onclick: () => selectSession(x.session) }, x.name))
    : []))
  showStatus()
}

function showStatus () {
  const s = state.sessions[state.session]
  if (!s) return
  const parts = [el('p', {}, `${s.name} — ${s.cards} card${s.cards === 1 ? '' : 's'}` +
    (s.dialect === 'deepseek-harness' ? ' (DeepSeek Harness log)' : '') +
    (s.indexing ? ' — indexing…' : '') + (state.store ? '' : ' — no store: notices cannot be expanded'))]
  if (s.badLines > 0) {
    const first = (s.bad || []).slice(0, 3).map((b) => `line ${b.line}${b.torn ? ' (torn)' : ''}: ${b.reason}`).join('; ')
    parts.push(el('p', { class: 'bad', 'data-bad-lines': s.badLines }, `${s.badLines} ${s.badLines === 1 ? 'line is not an event' : 'lines are not events'}: ${first}`))
  }
  if (s.error) parts.push(el('p', { class: 'bad', 'data-session-error': '' }, `No longer followed: ${s.error}`))
  $('#status').replaceChildren(...parts)
}

async function selectSession (n) {
  state.session = n
  for (const b of document.querySelectorAll('#sessions button')) b.setAttribute('aria-current', b.dataset.session === String(n) ? 'true' : 'false')
  showStatus()
  await showWindowAt(0)
}

// ---- the window of cards --------------------------------------------------

async function fetchCards (offset, limit) {
  const r = await api(`/api/cards?session=${state.session}&offset=${offset}&limit=${limit}`)
  state.total = r.total
  return r.cards
}

async function showWindowAt (offset) {
  state.loading = true
  try {
    const cards = await fetchCards(offset, PAGE)
    const main = $('#cards')
    main.replaceChildren()
    state.lo = offset
    state.hi = offset + cards.length
    for (let i = 0; i < cards.length; i++) main.append(renderCard(cards[i], offset + i))
    earlierButton()
  } finally { state.loading = false }
  await maybeLoadMore()
}

function earlierButton () {
  const main = $('#cards')
  main.querySelector('#earlier')?.remove()
  if (state.lo > 0) main.prepend(el('button', { type: 'button', id: 'earlier', onclick: loadEarlier }, `Show earlier cards (${state.lo} before)`))
}

async function loadEarlier () {
  if (state.loading || state.lo === 0) return
  state.loading = true
  try {
    const from = Math.max(0, state.lo - PAGE)
    const cards = await fetchCards(from, state.lo - from)
    const main = $('#cards')
    const anchor = main.querySelector('[data-card]')
    const top = anchor ? anchor.getBoundingClientRect().top : 0
    const nodes = cards.map((c, i) => renderCard(c, from + i))
    if (anchor) anchor.before(...nodes); else main.append(...nodes)
    state.lo = from
    while (state.hi - state.lo > MAX_WINDOW) { main.querySelector(`[data-position="${state.hi - 1}"]`)?.remove(); state.hi-- }
    earlierButton()
    if (anchor) window.scrollBy(0, anchor.getBoundingClientRect().top - top)
  } finally { state.loading = false }
}

async function loadMore () {
  if (state.loading || state.hi >= state.total) return
  state.loading = true
  try {
    const cards = await fetchCards(state.hi, PAGE)
    const main = $('#cards')
    for (let i = 0; i < cards.length; i++) main.append(renderCard(cards[i], state.hi + i))
    state.hi += cards.length
    // The document keeps a window: cards far above leave it.
    while (state.hi - state.lo > MAX_WINDOW) {
      const first = main.querySelector(`[data-position="${state.lo}"]`)
      const h = first ? first.getBoundingClientRect().height : 0
      first?.remove(); state.lo++
      window.scrollBy(0, -h)
    }
    earlierButton()
  } finally { state.loading = false }
}

async function maybeLoadMore () {
  const end = $('#end').getBoundingClientRect().top
  if (end < window.innerHeight + 400 && state.hi < state.total) { await loadMore(); await maybeLoadMore() }
}

// ---- a card ---------------------------------------------------------------

function renderCard (c, position) {
  const st = c.pending ? 'pending' : c.isError ? 'error' : 'ok'
  const head = el('header', {},
    el('span', { class: 'pos' }, `#${position + 1}`),
    el('h2', {}, c.title),
    c.title !== c.tool ? el('span', { class: 'tool' }, c.tool) : null,
    c.pending ? el('span', { class: 'badge pending' }, 'pending') : null,
    c.isError ? el('span', { class: 'badge error' }, 'error') : null,
    c.turn ? el('span', { class: 'turn', 'data-turn': c.turn.turnId, title: `turn ${c.turn.turnId}: ${c.turn.calls} calls share ${c.turn.budget} bytes` },
      `turn share ${c.turn.share} of ${c.turn.demand} bytes (budget ${c.turn.budget} for ${c.turn.calls} calls)`) : null)
  const isCode = typeof c.rawInput === 'string'
  const input = el('details', { class: 'input', open: isCode },
    el('summary', {}, isCode ? 'program' : 'arguments'),
    el('pre', { class: isCode ? 'code' : 'json' }, isCode ? c.rawInput : JSON.stringify(c.rawInput, null, 2)))
  const card = el('article', { class: 'card', 'data-card': c.callId, 'data-position': position, 'data-state': st },
    head, input, renderContent(c.content, c.notices, c.isError))
  if (c.dispatches.length > 0) {
    const errors = c.dispatches.filter((d) => d.isError).length
    const running = c.dispatches.filter((d) => d.pending).length
    card.append(el('details', { class: 'dispatches' },
      el('summary', {}, `${c.dispatches.length} nested call${c.dispatches.length === 1 ? '' : 's'}` +
        (errors ? `, ${errors} failed` : '') + (running ? `, ${running} running` : '')),
      el('ol', {}, c.dispatches.map(renderDispatch))))
  }
  return card
}

function renderDispatch (d) {
  const st = d.pending ? 'pending' : d.isError ? 'error' : 'ok'
  const args = JSON.stringify(d.args)
  return el('li', { 'data-dispatch': d.subCallId, 'data-state': st },
    el('details', {},
      el('summary', {}, `${d.tool}(${args.length > 120 ? args.slice(0, 117) + '…' : args})` +
        (d.pending ? ' — running' : d.isError ? ' — error' : '')),
      el('pre', { class: 'json' }, JSON.stringify(d.args, null, 2)),
      renderContent(d.content, d.notices, d.isError)))
}

function renderContent (content, notices, isError) {
  const box = el('div', { class: isError ? 'content error' : 'content' })
  if (content === null || content === undefined) {
    box.append(el('p', { class: 'pos' }, 'No result yet.'))
    return box
  }
  content.forEach((b, i) => {
    if (b.type === 'text') box.append(renderText(b.text, notices.filter((n) => n.block === i)))
    else if (b.type === 'image') box.append(el('img', { class: 'block', alt: 'image result', src: `data:${b.mimeType};base64,${b.data}` }))
    else box.append(el('pre', {}, JSON.stringify(b)))
  })
  return box
}

/// A text block: as text, its notices as buttons that expand in place.
function renderText (text, notices) {
  const pre = el('pre', { class: 'text' })
  if (notices.length === 0) {
    const t = text.trim()
    if ((t.startsWith('{') || t.startsWith('[')) && t.length < 1 << 20) {
      try { pre.textContent = JSON.stringify(JSON.parse(t), null, 2); pre.className = 'json'; return pre } catch {}
    }
    pre.textContent = text
    return pre
  }
  const bytes = enc.encode(text)
  let at = 0
  for (const n of notices) {
    if (n.start > at) pre.append(dec.decode(bytes.subarray(at, n.start)))
    pre.append(renderNotice(n, dec.decode(bytes.subarray(n.start, n.end))))
    at = n.end
  }
  if (at < bytes.length) pre.append(dec.decode(bytes.subarray(at)))
  return pre
}

function noticeQuery (n) {
  if (n.lines) return `lines=${n.lines}`
  if (n.bytes) return `bytes=${n.bytes}`
  if (n.pointer !== undefined) return `pointer=${encodeURIComponent(n.pointer)}`
  return ''
}

function renderNotice (n, label) {
  const b = el('button', {
    type: 'button', class: 'notice', 'data-notice': '', 'data-object': n.id, 'data-lines': n.lines,
    'data-bytes': n.bytes, 'data-pointer': n.pointer, disabled: !n.id,
    title: n.id ? 'Show what was left out, from the store' : 'The output could not be stored'
  }, label)
  if (n.id) b.addEventListener('click', () => toggleNotice(b, noticeQuery(n)))
  return b
}

async function toggleNotice (button, query, mark) {
  const open = button.nextElementSibling
  if (open && open.hasAttribute('data-omitted')) { open.remove(); button.setAttribute('aria-expanded', 'false'); return }
  button.setAttribute('aria-expanded', 'true')
  const box = el('div', { class: 'omitted', 'data-omitted': '', 'data-object': button.dataset.object })
  button.after(box)
  await loadPage(button, box, query, mark)
}

async function loadPage (button, box, query, mark) {
  if (!state.store) return noticeError(button, box, 'The viewer was started without a store (--store).')
  let page
  try {
    page = await api(`/api/object/${encodeURIComponent(button.dataset.object)}?${query}`)
  } catch (e) {
    return noticeError(button, box, e.message)
  }
  button.removeAttribute('data-error')
  box.querySelector('.more')?.remove()
  box.append(renderPage(page, mark))
  if (page.next) {
    box.append(el('button', { type: 'button', class: 'more', 'data-next': page.next, onclick: () => loadPage(button, box, page.next, mark) },
      `more (${page.next.replace('=', ' ')})`))
  }
}

function renderPage (page, mark) {
  const pre = el('pre', { 'data-shown': page.shown })
  if (mark === undefined) { pre.textContent = page.text; return pre }
  // A search hit: its line marked. The page starts at a known line.
  const first = Number((page.shown.match(/^lines=(\d+)/) || [])[1] || 0)
  const lines = page.text.split('\n')
  lines.forEach((l, i) => {
    const text = l + (i < lines.length - 1 ? '\n' : '')
    pre.append(first + i === mark ? el('mark', { 'data-line': mark }, text) : text)
  })
  return pre
}

function noticeError (button, box, message) {
  button.setAttribute('data-error', message)
  box.replaceChildren(el('span', { class: 'notice-error', role: 'alert' }, message))
}

// ---- search ---------------------------------------------------------------

let searchSeq = 0
async function runSearch () {
  const q = $('#q').value.trim()
  const seq = ++searchSeq
  const results = $('#results')
  if (!q) { results.hidden = true; return }
  results.hidden = false
  $('#results-summary').textContent = '…'
  let r
  try {
    r = await api(`/api/search?q=${encodeURIComponent(q)}&spills=${$('#spills').checked ? 1 : 0}&limit=200`)
  } catch (e) {
    if (seq === searchSeq) $('#results-summary').textContent = `failed: ${e.message}`
    return
  }
  if (seq !== searchSeq) return
  $('#results-summary').textContent = `${r.hits.length}${r.more ? '+' : ''} hit${r.hits.length === 1 ? '' : 's'}` +
    (r.partial ? ' (stopped at its time limit)' : '') + (r.errors && r.errors.length ? ` — ${r.errors.join('; ')}` : '')
  $('#hits').replaceChildren(...r.hits.map((h) => el('li', {
    'data-hit': '', 'data-session': h.session, 'data-card-position': h.card, 'data-call': h.callId,
    'data-object': h.object, 'data-line': h.line, onclick: () => openHit(h)
  }, `#${h.card + 1} ${h.object ? `stored ${h.object.slice(0, 15)}… line ${h.line}` : `line ${h.line}`}: `, el('code', {}, h.text))))
}

async function openHit (h) {
  if (h.session !== state.session) await selectSession(h.session)
  let card = document.querySelector(`[data-position="${h.card}"]`)
  if (!card) { await showWindowAt(Math.max(0, h.card - (h.card % PAGE))); card = document.querySelector(`[data-position="${h.card}"]`) }
  if (!card) return
  if (h.object) {
    const short = (id) => (id || '').replace(/^blake3:/, '')
    let notice = [...card.querySelectorAll('[data-notice]')].find((n) => n.dataset.object && short(h.object).startsWith(short(n.dataset.object)))
    if (notice) {
      notice.closest('details')?.setAttribute('open', '')
      notice.closest('.dispatches')?.setAttribute('open', '')
    } else {
      notice = el('button', { type: 'button', class: 'notice', 'data-notice': '', 'data-object': h.object }, `[stored output ${h.object}]`)
      card.append(notice)
    }
    if (notice.nextElementSibling?.hasAttribute('data-omitted')) notice.nextElementSibling.remove()
    await toggleNotice(notice, `lines=${Math.max(1, h.line - 10)}:${h.line + 10}`, h.line)
    const m = card.querySelector(`mark[data-line="${h.line}"]`)
    ;(m || notice).scrollIntoView({ block: 'center' })
  } else {
    card.scrollIntoView({ block: 'start' })
  }
  card.classList.add('flash')
  setTimeout(() => card.classList.remove('flash'), 1500)
}

// ---- live -----------------------------------------------------------------

function follow () {
  const source = new EventSource('/api/events')
  source.addEventListener('session', async (e) => {
    const m = JSON.parse(e.data)
    const s = state.sessions[m.session]
    if (!s) return
    if (m.error) s.error = m.error
    if (m.cards !== undefined) s.cards = m.cards
    if (m.badLines !== undefined) s.badLines = m.badLines
    if (m.indexing !== undefined) s.indexing = m.indexing
    if (m.badLines > (s.bad || []).length || m.indexing === false) { try { await loadSessions() } catch {} }
    if (m.session === state.session) {
      showStatus()
      await refreshWindow(m)
    }
  })
  source.addEventListener('resync', () => showWindowAt(state.lo))
}

async function refreshWindow (m) {
  const wasAtEnd = state.hi >= state.total
  state.total = m.cards
  const changed = m.changed === null ? null : (m.changed || []).filter((p) => p >= state.lo && p < state.hi)
  if (changed === null) { await showWindowAt(state.lo); return }
  if (changed.length > 0) {
    const from = Math.min(...changed)
    const to = Math.max(...changed) + 1
    const cards = await fetchCards(from, to - from)
    cards.forEach((c, i) => {
      const pos = from + i
      if (!changed.includes(pos)) return
      const old = document.querySelector(`[data-position="${pos}"]`)
      if (old) old.replaceWith(renderCard(c, pos))
    })
  }
  if (wasAtEnd && state.hi < state.total) await loadMore()
  await maybeLoadMore()
}

// ---- start ----------------------------------------------------------------

async function start () {
  let timer
  $('#q').addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(runSearch, 250) })
  $('#spills').addEventListener('change', runSearch)
  $('#search').addEventListener('submit', (e) => { e.preventDefault(); clearTimeout(timer); runSearch() })
  window.addEventListener('scroll', () => { maybeLoadMore() }, { passive: true })
  try {
    await loadSessions()
    await showWindowAt(0)
  } catch (e) {
    $('#status').replaceChildren(el('p', { class: 'bad' }, `Cannot load the session: ${e.message}`))
  }
  follow()
  document.body.dataset.ready = 'true'
}

start()
