package config

import "time"

// compile parses the window's zone, days and times; it reports each problem with its field.
func (s *Schedule) compile(p *problems, path string) {
	s.loc = loadZone(p, path+".timezone", s.Timezone)
	s.Window.compile(p, path)
}

// Active reports whether the window is open at t. A window that runs past midnight belongs to
// the day it started on: fri 22:00-06:00 is open on Saturday 03:00.
func (s *Schedule) Active(t time.Time) bool {
	if s.loc == nil {
		return false // not compiled: Load and Validate compile every schedule
	}
	return s.Window.active(t, s.loc)
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
