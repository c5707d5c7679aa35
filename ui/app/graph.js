// The state graph of a definition, drawn as SVG: states in columns by their distance from the
// start, arrows for the moves a state may make, and (for a workflow) its current state and the
// states and moves it went through.
import { html } from './lib.js';

const W = 150, H = 40, GX = 70, GY = 22, PAD = 16;

// layout puts each state in the column of its shortest distance from a START state; states no
// move reaches go in a last column.
function layout(states) {
  const byName = new Map(states.map((s) => [s.name, s]));
  const depth = new Map();
  const queue = states.filter((s) => s.kind === 'START').map((s) => s.name);
  queue.forEach((n) => depth.set(n, 0));
  while (queue.length) {
    const n = queue.shift();
    for (const m of (byName.get(n)?.next || [])) {
      if (byName.has(m) && !depth.has(m)) { depth.set(m, depth.get(n) + 1); queue.push(m); }
    }
  }
  const last = Math.max(0, ...depth.values()) + 1;
  const cols = [];
  for (const s of states) {
    const d = depth.has(s.name) ? depth.get(s.name) : last;
    (cols[d] = cols[d] || []).push(s.name);
  }
  const pos = new Map();
  const dense = cols.filter(Boolean);
  dense.forEach((col, x) => col.forEach((n, y) => pos.set(n, { x: PAD + x * (W + GX), y: PAD + y * (H + GY) })));
  const rows = Math.max(1, ...dense.map((c) => c.length));
  return { pos, width: PAD * 2 + dense.length * W + (dense.length - 1) * GX, height: PAD * 2 + rows * H + (rows - 1) * GY + 30 };
}

function edgePath(a, b) {
  if (b.x > a.x) {
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
    return `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2 - 2},${y2}`;
  }
  // A move back or within a column bends below the boxes.
  const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y + H, dip = Math.max(y1, y2) + 28;
  return `M${x1},${y1} C${x1},${dip} ${x2},${dip} ${x2},${y2 + 2}`;
}

// StateGraph draws states (name kind next); current is a state name, taken a list of
// [from, to] moves the workflow made.
export function StateGraph({ states, current, taken = [], label }) {
  if (!states || !states.length) return html`<p class="muted">No states.</p>`;
  const { pos, width, height } = layout(states);
  const visited = new Set(taken.flat().filter(Boolean));
  const takenSet = new Set(taken.map(([a, b]) => a + '\u0000' + b));
  const desc = `${label || 'State graph'}: ${states.length} states` + (current ? `, current state ${current}` : '') +
    (visited.size ? `, visited ${[...visited].join(', ')}` : '');
  return html`<svg class="graph" role="img" aria-label=${desc} viewBox="0 0 ${width} ${height}" width=${width} height=${height} data-current=${current || ''}>
    <title>${desc}</title>
    <defs>
      <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#6b7785" /></marker>
      <marker id="arrow-taken" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#126b2f" /></marker>
    </defs>
    ${states.flatMap((s) => s.next.filter((n) => pos.has(n)).map((n) => {
      const on = takenSet.has(s.name + '\u0000' + n);
      return html`<path class=${'edge' + (on ? ' taken' : '')} d=${edgePath(pos.get(s.name), pos.get(n))} marker-end=${on ? 'url(#arrow-taken)' : 'url(#arrow)'} />`;
    }))}
    ${states.map((s) => {
      const p = pos.get(s.name);
      const cls = 'node' + (s.name === current ? ' current' : visited.has(s.name) ? ' visited' : '');
      const name = s.name.length > 22 ? s.name.slice(0, 21) + '…' : s.name;
      return html`<g class=${cls} data-state=${s.name} transform="translate(${p.x},${p.y})">
        <title>${s.name} (${s.kind})${s.description ? ': ' + s.description : ''}</title>
        <rect width=${W} height=${H} rx=${s.kind === 'START' || s.kind === 'END' || s.kind === 'ERROR' ? 18 : 4} />
        <text x="10" y="17">${name}</text>
        <text class="kind" x="10" y="31">${s.kind}${s.name === current ? ' · current' : ''}</text>
      </g>`;
    })}
  </svg>`;
}
