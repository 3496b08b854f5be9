package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/rotahq/rota/internal/errtext"
)

// Window is a recurring time of day on some days of the week, read in a time zone its owner
// gives (a schedule's, a tariff's). Start and End are HH:MM; End may be 24:00 (the end of the
// day), and an End before Start runs past midnight. No days means every day.
type Window struct {
	Days  []string `yaml:"days"`
	Start string   `yaml:"start"`
	End   string   `yaml:"end"`

	start int // minutes after midnight
	end   int // minutes after midnight, up to 1440
	days  [7]bool
}

const minutesPerDay = 24 * 60

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

var dayNames = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// compile parses the days and times; it reports each problem with its field under path.
func (w *Window) compile(p *problems, path string) {
	w.days = [7]bool{}
	if len(w.Days) == 0 {
		w.days = [7]bool{true, true, true, true, true, true, true}
	}
	for i, d := range w.Days {
		wd, ok := weekdays[strings.ToLower(d)]
		if !ok {
			p.add(fmt.Sprintf("%s.days[%d]", path, i), "%s is not a day (mon, tue, wed, thu, fri, sat, sun)", errtext.Quote(d))
			continue
		}
		w.days[wd] = true
	}
	var ok1, ok2 bool
	w.start, ok1 = clock(w.Start)
	if w.End == "24:00" {
		w.end, ok2 = minutesPerDay, true
	} else {
		w.end, ok2 = clock(w.End)
	}
	if !ok1 {
		p.add(path+".start", "%s is not a time of day HH:MM", errtext.Quote(w.Start))
	}
	if !ok2 {
		p.add(path+".end", "%s is not a time of day HH:MM (or 24:00)", errtext.Quote(w.End))
	}
	if ok1 && ok2 && w.start == w.end {
		p.add(path+".end", "equals start: the window would be empty")
	}
}

// clock parses HH:MM into minutes after midnight.
func clock(s string) (int, bool) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, false
	}
	return t.Hour()*60 + t.Minute(), true
}

// openAt reports whether the window covers minute m (after local midnight) of day. A window
// that runs past midnight belongs to the day it started on: fri 22:00-06:00 covers Saturday
// 03:00.
func (w *Window) openAt(day time.Weekday, m int) bool {
	if w.start < w.end {
		return w.days[day] && m >= w.start && m < w.end
	}
	if m >= w.start {
		return w.days[day]
	}
	return m < w.end && w.days[(day+6)%7]
}

// active reports whether the window is open at t, read in loc.
func (w *Window) active(t time.Time, loc *time.Location) bool {
	local := t.In(loc)
	return w.openAt(local.Weekday(), local.Hour()*60+local.Minute())
}

// closesAfter returns when the window, open at t (read in loc), closes: the first instant
// after t at which active is false. While the zone's offset holds, the wall clock keeps pace
// with the instants and the window closes at its end on the wall clock; where the offset
// changes first (daylight saving time: the clock jumps over times or back to them), the window
// is read again at the change, as active reads it, and followed on from there.
func (w *Window) closesAfter(t time.Time, loc *time.Location) time.Time {
	at := t
	for range 4 {
		local := at.In(loc)
		name, offset := local.Zone()
		y, mo, d := local.Date()
		if w.start >= w.end && local.Hour()*60+local.Minute() >= w.start {
			d++ // opened today, closes tomorrow
		}
		end := time.Date(y, mo, d, 0, w.end, 0, 0, time.FixedZone(name, offset))
		_, change := local.ZoneBounds()
		if change.IsZero() || !end.After(change) {
			return end
		}
		if !w.active(change, loc) {
			return change
		}
		at = change
	}
	return at // still open after four changes of offset: looked up again there
}

// spans reports whether t falls in one of the window's openings, each taken from the first
// instant the wall clock in loc reads its start (or jumps past it) to the first instant it
// reads its end (or jumps past it). It differs from active only on a day the clock changes:
// a clock set back while the window is open does not close it and open it again, nor one set
// back after its end open it again.
func (w *Window) spans(t time.Time, loc *time.Location) bool {
	y, mo, d := t.In(loc).Date()
	for back := range 2 {
		day := time.Date(y, mo, d-back, 12, 0, 0, 0, time.UTC) // the calendar, not the clock
		if !w.days[day.Weekday()] {
			continue
		}
		dy, dm, dd := day.Date()
		endDay := dd
		if w.end <= w.start {
			endDay++
		}
		if !t.Before(firstReading(dy, dm, dd, w.start, loc)) && t.Before(firstReading(dy, dm, endDay, w.end, loc)) {
			return true
		}
	}
	return false
}

// firstReading is the first instant at which the wall clock in loc reads minute m of the day
// y-mo-d, or, where the clock jumps over that time, the instant of the jump.
func firstReading(y int, mo time.Month, d, m int, loc *time.Location) time.Time {
	wall := time.Date(y, mo, d, 0, m, 0, 0, time.UTC)
	at := time.Date(y, mo, d, 0, m, 0, 0, loc) // one reading of it, or a time beside a jump
	start, end := at.ZoneBounds()
	switch got := wallOf(at, loc); {
	case got.After(wall) && !start.IsZero():
		return start // skipped: the clock jumped past it when this offset began
	case got.Before(wall) && !end.IsZero():
		return end // skipped: the clock jumps past it when this offset ends
	case start.IsZero():
		return at
	}
	// Read twice (the clock set back): under the offset before this one too?
	_, before := start.Add(-time.Second).Zone()
	if first := wall.Add(-time.Duration(before) * time.Second); first.Before(start) && wallOf(first, loc).Equal(wall) {
		return first
	}
	return at
}

// wallOf is what the wall clock in loc reads at t, as a time in UTC.
func wallOf(t time.Time, loc *time.Location) time.Time {
	local := t.In(loc)
	y, mo, d := local.Date()
	h, mi, s := local.Clock()
	return time.Date(y, mo, d, h, mi, s, local.Nanosecond(), time.UTC)
}

// loadZone reads a time zone name ("" is UTC), reporting an unknown one at path.
func loadZone(p *problems, path, tz string) *time.Location {
	if tz == "" {
		return time.UTC
	}
	if tz == "Local" { // Go's name for the host's zone: the same config would mean another hour elsewhere
		p.add(path, "\"Local\" is this host's zone, whatever it is: name the zone (an IANA name such as Europe/Berlin)")
		return time.UTC
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		p.add(path, "unknown time zone %s", errtext.Quote(tz))
		return time.UTC
	}
	return loc
}
