package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/rotahq/rota/internal/errtext"
)

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// compile parses the window's zone, days and times; it reports each problem with its field.
func (s *Schedule) compile(p *problems, path string) {
	tz := s.Timezone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		p.add(path+".timezone", "unknown time zone %s", errtext.Quote(s.Timezone))
		loc = time.UTC
	}
	s.loc = loc
	s.days = [7]bool{}
	if len(s.Days) == 0 {
		s.days = [7]bool{true, true, true, true, true, true, true}
	}
	for i, d := range s.Days {
		wd, ok := weekdays[strings.ToLower(d)]
		if !ok {
			p.add(fmt.Sprintf("%s.days[%d]", path, i), "%s is not a day (mon, tue, wed, thu, fri, sat, sun)", errtext.Quote(d))
			continue
		}
		s.days[wd] = true
	}
	var ok1, ok2 bool
	s.start, ok1 = clock(s.Start)
	s.end, ok2 = clock(s.End)
	if !ok1 {
		p.add(path+".start", "%s is not a time of day HH:MM", errtext.Quote(s.Start))
	}
	if !ok2 {
		p.add(path+".end", "%s is not a time of day HH:MM", errtext.Quote(s.End))
	}
	if ok1 && ok2 && s.start == s.end {
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

// Active reports whether the window is open at t. A window that runs past midnight belongs to
// the day it started on: fri 22:00-06:00 is open on Saturday 03:00.
func (s *Schedule) Active(t time.Time) bool {
	if s.loc == nil {
		return false // not compiled: Load and Validate compile every schedule
	}
	local := t.In(s.loc)
	m := local.Hour()*60 + local.Minute()
	day := local.Weekday()
	if s.start < s.end {
		return s.days[day] && m >= s.start && m < s.end
	}
	if m >= s.start {
		return s.days[day]
	}
	return m < s.end && s.days[(day+6)%7]
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
