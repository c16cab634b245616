// A code skill in Node.js: the tool's arguments arrive as JSON on stdin, the result leaves as JSON
// on stdout. The tool's name is the first argument. No dependencies, no network.
'use strict';

const FACTORS = {
  length: { m: 1, km: 1000, mi: 1609.344, ft: 0.3048, in: 0.0254 },
  mass: { kg: 1, g: 0.001, lb: 0.45359237, oz: 0.028349523125 },
};

function toKelvin(value, unit) {
  switch (unit) {
    case 'C': return value + 273.15;
    case 'F': return (value - 32) * 5 / 9 + 273.15;
    case 'K': return value;
    default: return null;
  }
}

function fromKelvin(kelvin, unit) {
  switch (unit) {
    case 'C': return kelvin - 273.15;
    case 'F': return (kelvin - 273.15) * 9 / 5 + 32;
    case 'K': return kelvin;
    default: return null;
  }
}

function convert({ value, from, to }) {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    return { success: false, error: 'value must be a finite number' };
  }
  for (const [kind, units] of Object.entries(FACTORS)) {
    if (from in units && to in units) {
      const result = value * units[from] / units[to];
      return { value: Number(result.toPrecision(12)), unit: to, kind };
    }
  }
  const kelvin = toKelvin(value, from);
  const result = kelvin === null ? null : fromKelvin(kelvin, to);
  if (result === null) {
    return { success: false, error: `cannot convert ${from} to ${to}; units: m km mi ft in, kg g lb oz, C F K` };
  }
  if (kelvin < 0) {
    return { success: false, error: 'below absolute zero' };
  }
  return { value: Number(result.toPrecision(12)), unit: to, kind: 'temperature' };
}

const TOOLS = { convert };

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', chunk => { input += chunk; });
process.stdin.on('end', () => {
  const tool = TOOLS[process.argv[2]];
  if (!tool) {
    process.stdout.write(JSON.stringify({ success: false, error: `unknown tool ${process.argv[2]}` }));
    return;
  }
  process.stdout.write(JSON.stringify(tool(JSON.parse(input || '{}'))));
});
