-- A paused schedule fires no more, so it has no next fire (resuming computes one from then on).
UPDATE schedules SET next_fire = NULL WHERE paused;
