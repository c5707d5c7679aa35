// Which operations a workflow's status allows: the engine's rules (workflow/ops.go), so that a
// button that would only be refused is disabled, with its reason as the button's title. The
// server still decides: a status that changed since the page read it is refused with CONFLICT.

const ended = ['FINISHED', 'FAILED', 'CANCELLED'];
const allows = {
  pause: (s) => ['CREATED', 'IN_PROGRESS', 'EXECUTING', 'WAITING'].includes(s),
  resume: (s) => s === 'PAUSED',
  wakeUp: (s) => ['CREATED', 'IN_PROGRESS', 'WAITING'].includes(s),
  cancel: (s) => !ended.includes(s),
  retry: (s) => s === 'MANUAL' || s === 'FAILED',
  signal: (s) => !ended.includes(s),
  update: (s) => s !== 'EXECUTING',
};
const why = {
  pause: 'only CREATED, IN_PROGRESS, EXECUTING or WAITING workflows can be paused',
  resume: 'only PAUSED workflows can be resumed',
  wakeUp: 'only CREATED, IN_PROGRESS or WAITING workflows can be woken up',
  cancel: 'an ended workflow cannot be cancelled',
  retry: 'only MANUAL or FAILED workflows can be retried',
  signal: 'an ended workflow takes no signals',
  update: 'a workflow executing a step must be paused before it is updated',
};

export const isEnded = (status) => ended.includes(status);

// allowed reports whether an operation applies to a workflow in a status.
export function allowed(op, status) { return allows[op](status); }

// refusal is the reason an operation does not apply to a status, or '' when it does.
export function refusal(op, status) { return allows[op](status) ? '' : status + ': ' + why[op]; }
