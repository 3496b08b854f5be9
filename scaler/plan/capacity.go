package plan

import (
	"math"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// shape is what one job asks of each of its servers, normalised: every job takes at least one
// CPU, so a server with no CPU left is full. is is the one kind of room it needs beside the
// resources: kindShared for most, kindWhole for a job that takes each of its servers whole
// (fleet.Needs.Whole: it fits only an empty one and leaves it full), kindUser for one that
// shares its servers with its user's work alone (fleet.Needs.User), with its user's number
// (see userID): it fits only an empty server or one running that user's work alone, and
// leaves room there for no other user's; any other job's user is noUser, which no capacity's
// is.
type shape struct {
	cpus int
	gpus int
	mem  uint64
	is   who
}

// who is whose work: kinds of it, and a user's (a number, see userID). A struct of its own:
// shape and capacity stay of four fields, which the compiler keeps in registers (placement
// walks every server with them).
type who struct {
	kinds kinds
	user  int32
}

// noUser is the user of a shape that is not user-exclusive: no capacity's (holds and mayHold
// compare the two without asking first whether the shape has one).
const noUser = -1

// kinds are kinds of work as a server has room for them (capacity.admits) and one job needs
// (shape.is). As wide as a user's number, so who, and shape and groupKey with it, have no
// padding: a demand entry's key is hashed in one run over its numbers (uint8, the padding
// after it made the hash of who and of shape calls of their own for every entry).
type kinds uint32

const (
	kindShared kinds = 1 << iota // work of no named user: no work there keeps the server to its user's
	kindWhole                    // a whole-server job: the server is empty
	kindUser                     // any user's user-exclusive work: the server is empty (or, in a bound, runs several users' work alone)
	kindsEmpty = kindShared | kindWhole | kindUser
)

// shapeOf is the shape of a job of shape s and needs nd, but for its user (see withUser).
func shapeOf(s config.Shape, nd fleet.Needs) shape {
	sh := shape{cpus: max(s.CPUs, 1), gpus: max(s.GPUs, 0), mem: uint64(s.Memory), is: who{kinds: kindShared, user: noUser}}
	if nd.Whole {
		sh.is.kinds = kindWhole
	}
	return sh
}

// jobShape is the shape of a running job, as a move places it.
func (p *pass) jobShape(j *fleet.Job) shape {
	return p.withUser(shapeOf(config.Shape{CPUs: j.CPUs, GPUs: j.GPUs, Memory: config.Bytes(max(j.Memory, 0))}, j.Needs), j.Needs.User)
}

// withUser is s for a job exclusive to user (fleet.Needs.User; "": none), unless it takes its
// servers whole. Apart from shapeOf: grouping the demand reads no entry's user, only each
// group's (its key's needs index tells users apart).
func (p *pass) withUser(s shape, user string) shape {
	if user != "" && s.is.kinds != kindWhole {
		s.is = who{kinds: kindUser, user: p.userID(user)}
	}
	return s
}

// userID is user's number in the planner's memory (0 for none), numbered from 1 as first seen
// and kept from pass to pass, as the screens that hold them are. Shapes and capacities hold
// numbers, not names, so they stay as small as they were without users: placement copies them
// for every server it walks. The numbers grow with the users seen, not with the passes.
func (p *pass) userID(user string) int32 {
	if user == "" {
		return 0
	}
	id, ok := p.mem.users[user]
	if !ok {
		if p.mem.users == nil {
			p.mem.users = map[string]int32{}
		}
		id = int32(len(p.mem.users) + 1)
		p.mem.users[user] = id
	}
	return id
}

// capacity is what a server has left for waiting work. Memory is unlimited when the pool's
// profile does not give it (config.Profile.Fits ignores memory then, and so does rota).
// admits is whose work has room there beside the resources: the kinds of work (kindsEmpty:
// nothing is allocated on the server and nothing placed there yet), and the user's
// user-exclusive work (the user whose work alone is there; 0: none).
type capacity struct {
	cpus   int
	gpus   int
	mem    uint64
	admits who
}

func profileCapacity(pr config.Profile) capacity {
	c := capacity{cpus: pr.CPUCores, gpus: pr.GPUs, mem: math.MaxUint64, admits: who{kinds: kindsEmpty}}
	if pr.Memory > 0 {
		c.mem = uint64(pr.Memory)
	}
	return c
}

// freeCapacity is what an On server has left, as far as the job manager tells; user is the
// number of the user whose work alone runs there (j.User, see userID). The job manager reports
// CPUs and GPUs allocated but not memory: memory is taken in proportion to the CPUs in use, an
// estimate that errs towards waking a server rather than leaving work waiting.
func freeCapacity(pr config.Profile, j fleet.JobsView, user int32) capacity {
	c := profileCapacity(pr)
	c.cpus = max(pr.CPUCores-j.CPUs, 0)
	c.gpus = max(pr.GPUs-j.GPUs, 0)
	switch {
	case !j.Allocated():
	case j.UserOnly:
		c.admits = who{user: user}
	default:
		c.admits = who{kinds: kindShared, user: user}
	}
	if j.Allocated() && pr.Memory > 0 && pr.CPUCores > 0 {
		c.mem = uint64(pr.Memory) / uint64(pr.CPUCores) * uint64(c.cpus)
	}
	return c
}

// holds is how many jobs of shape s fit in c. It asks mayHold's questions in a cheaper order
// (a server short of CPUs or of room for the kind is passed at once, one short of GPUs or
// memory holds none by the division), so that it stays small enough to inline into the walks.
func (c capacity) holds(s shape) int {
	if c.cpus < s.cpus || c.admits.kinds&s.is.kinds == 0 && s.is.user != c.admits.user {
		return 0 // most servers walked past hold none: no division for them
	}
	n := c.cpus / s.cpus
	if s.gpus > 0 {
		n = min(n, c.gpus/s.gpus)
	}
	if s.mem > 0 {
		n = int(min(uint64(n), c.mem/s.mem))
	}
	if s.is.kinds == kindWhole {
		return min(n, 1)
	}
	return n
}

// take removes n jobs of shape s; a whole-server job leaves nothing, a user-exclusive one room
// for its user's work alone, and work of no named user room for no user-exclusive work.
func (c *capacity) take(s shape, n int) {
	if n <= 0 {
		return
	}
	switch s.is.kinds {
	case kindWhole:
		*c = capacity{}
		return
	case kindUser:
		c.admits = who{user: s.is.user} // it fit: the server is empty or runs its user's work alone
	default:
		c.admits = who{kinds: c.admits.kinds & kindShared}
	}
	c.cpus -= n * s.cpus
	c.gpus -= n * s.gpus
	if c.mem != math.MaxUint64 {
		c.mem -= uint64(n) * s.mem
	}
}

// union is the capacity that bounds both c and o from above, dimension by dimension; two
// users' servers leave room for any user's.
func (c capacity) union(o capacity) capacity {
	c.cpus, c.gpus, c.mem, c.admits.kinds = max(c.cpus, o.cpus), max(c.gpus, o.gpus), max(c.mem, o.mem), c.admits.kinds|o.admits.kinds
	if u := o.admits.user; u != c.admits.user {
		if c.admits.user == 0 {
			c.admits.user = u
		} else if u != 0 {
			c.admits = who{kinds: c.admits.kinds | kindUser}
		}
	}
	return c
}

// mayHold reports whether c, an upper bound, leaves room for one job of shape s.
func (c capacity) mayHold(s shape) bool {
	return c.cpus >= s.cpus && c.gpus >= s.gpus && c.mem >= s.mem && (c.admits.kinds&s.is.kinds != 0 || s.is.user == c.admits.user)
}

func (c capacity) full() bool { return c.cpus < 1 || c.mem == 0 }
