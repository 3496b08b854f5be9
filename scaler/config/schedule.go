package config

import "time"

// compile parses the window's zone, days and times; it reports each problem with its field.
func (s *Schedule) compile(p *problems, path string) {
	s.loc = loadZone(p, path+".timezone", s.Timezone)
	s.Window.compile(p, path)
}

// Active reports whether the window is open at t. A window that runs past midnight belongs to
// the day it started on: fri 22:00-06:00 is open on Saturday 03:00. On a day the clock
// changes, the window is open from the first instant the clock reads its start (or jumps past
// it) to the first instant it reads its end (or jumps past it): a 02:30-06:00 window on the
// night the clock goes back from 03:00 to 02:00 stays open, rather than closing at 03:00 and
// opening again half an hour later.
func (s *Schedule) Active(t time.Time) bool {
	if s.loc == nil {
		return false // not compiled: Load and Validate compile every schedule
	}
	// An opening that holds t lies within two days of it: where the offset is the same all
	// that while, the wall clock reads each instant once and the plain reading is the answer.
	const near = 49 * time.Hour
	if start, end := t.In(s.loc).ZoneBounds(); (start.IsZero() || t.Sub(start) > near) && (end.IsZero() || end.Sub(t) > near) {
		return s.Window.active(t, s.loc)
	}
	return s.Window.spans(t, s.loc)
}

// AppliesTo reports whether the window covers pool.
func (s *Schedule) AppliesTo(pool string) bool {
	if len(s.Pools) == 0 {
		return true
	}
	for _, p := range s.Pools {
		if p == pool {
			return true
		}
	}
	return false
}
