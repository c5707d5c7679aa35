package engine

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MinScheduleInterval is the shortest interval an `@every` schedule may have. It is the cron
// library's resolution: it rounds shorter (and negative) delays up to a second and cuts fractions of
// a second off, so anything finer would silently fire at another pace than the one asked for.
// Schedules are fired from every node's heartbeat (every 2 s by default), so a fire may come up to
// one heartbeat late, and fires an interval shorter than that misses are made up by one run.
const MinScheduleInterval = time.Second

// cronParser reads standard five-field cron expressions and descriptors (@daily, @every 10m).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseCron reads a schedule's cron expression, refusing what the cron library would accept but
// not keep: an `@every` interval below MinScheduleInterval or not a whole number of seconds, a time
// zone inside the expression (the schedule's timezone field is the one place for it, so that the
// two cannot disagree), and an expression that never fires (`0 0 30 2 *`).
func parseCron(spec string, loc *time.Location, now time.Time) (cron.Schedule, error) {
	trimmed := strings.TrimSpace(spec)
	upper := strings.ToUpper(trimmed)
	if strings.HasPrefix(upper, "TZ=") || strings.HasPrefix(upper, "CRON_TZ=") {
		return nil, invalid("cron", "a time zone inside the cron expression is not allowed; set the timezone field instead")
	}
	if rest, ok := strings.CutPrefix(trimmed, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, invalid("cron", "not a cron expression: %v", err)
		}
		if d < MinScheduleInterval {
			return nil, invalid("cron", "the interval of @every must be at least %s, not %s", MinScheduleInterval, d)
		}
		if d%time.Second != 0 {
			return nil, invalid("cron", "the interval of @every must be a whole number of seconds, not %s", d)
		}
	}
	sched, err := cronParser.Parse(trimmed)
	if err != nil {
		return nil, invalid("cron", "not a cron expression: %v", err)
	}
	// The library looks five years ahead and gives the zero time when nothing matches.
	if sched.Next(now.In(loc)).IsZero() {
		return nil, invalid("cron", "the cron expression %q never fires", spec)
	}
	return sched, nil
}

// loadTimezone resolves a schedule's time zone: an IANA name, UTC when empty. "Local" is refused:
// it is whatever zone the node happens to run in, so nodes in different zones would fire apart.
func loadTimezone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if strings.EqualFold(name, "Local") {
		return nil, invalid("timezone", "%q is not a time zone; give an IANA name such as Europe/Berlin, or UTC", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, invalid("timezone", "unknown time zone %q", name)
	}
	return loc, nil
}
