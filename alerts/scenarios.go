package alerts

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/scaler/config"
)

// The scenarios of the generated rule tests. Each is one server (or queue, or scaler) whose
// series and checks are derived from the policy: a threshold is crossed by a fraction of
// itself, a window is waited out to the step. Where Prometheus' rate() makes the exact step of
// a change depend on sample alignment (a busy spell's edges), the checks stand a few steps
// clear of it, and say so.

// cpuStep is one step of a server's CPU counters: a sample whose interval (ending at this
// step) was busy for that share, a gap, or a stale marker; restart starts the counters again
// from zero (the exporter restarted).
type cpuStep struct {
	kind    sampleKind
	busy    float64
	restart bool
	// frozen: the counters do not move (an exporter sending its last values again).
	frozen bool
}

// busyFor is n+1 steps of CPU samples at the busy share u.
func busyFor(u float64, n int) []cpuStep {
	out := make([]cpuStep, n+1)
	for i := range out {
		out[i] = cpuStep{kind: present, busy: u}
	}
	return out
}

// cpu is the idle and user counters of a 4-CPU server, and its CPU count, sent with them.
func (tm timing) cpu(labels map[string]string, steps []cpuStep) []InputSeries {
	perStep := 4 * tm.step.Seconds()
	var idle, user, cpus samples
	var ci, cu float64
	started := false
	for _, st := range steps {
		switch {
		case st.kind != present:
			s := sample{kind: st.kind}
			idle, user, cpus = append(idle, s), append(user, s), append(cpus, s)
			continue
		case !started || st.restart:
			ci, cu, started = 0, 0, true
		case st.frozen:
		default:
			ci, cu = ci+perStep*(1-st.busy), cu+perStep*st.busy
		}
		idle, user, cpus = append(idle, val(ci)), append(user, val(cu)), append(cpus, val(4))
	}
	return []InputSeries{
		series(NodeCPUSeconds, with(labels, "mode", "idle"), idle),
		series(NodeCPUSeconds, with(labels, "mode", "user"), user),
		series(NodeCPUs, labels, cpus),
	}
}

// declared is rota's own series of the GPUs the server's pool declares, for n+1 steps.
func declared(labels map[string]string, n, gpus int) InputSeries {
	return series(FleetNodeGPUs, labels, constant(float64(gpus), n))
}

// declaredHandover is declared across a handover between two rotas (apart by instance):
// rota-a's series up to step at+1, then a stale marker; rota-b's from step at-1 on (three
// steps with both).
func declaredHandover(labels map[string]string, n, at, gpus int) []InputSeries {
	a := append(append(constant(float64(gpus), at+1), sample{kind: stale}), gaps(n-at-3)...)
	b := append(gaps(at-2), constant(float64(gpus), n-at+1)...)
	return []InputSeries{
		series(FleetNodeGPUs, with(with(labels, "job", ScalerJob), "instance", "rota-a:10091"), a),
		series(FleetNodeGPUs, with(with(labels, "job", ScalerJob), "instance", "rota-b:10091"), b),
	}
}

// gpu is the busy gauges of a server's GPUs, one value each for n+1 steps.
func (tm timing) gpu(labels map[string]string, n int, utils ...float64) []InputSeries {
	out := []InputSeries{series(GPUDevices, labels, constant(float64(len(utils)), n))}
	for i, u := range utils {
		out = append(out, tm.busy(with(labels, "gpu", fmt.Sprint(i)), constant(u, n)))
	}
	return out
}

// busy is one GPU's busy gauge (labels name the GPU) in the series the policy's GPU signal
// reads: SM activity under sm_active, utilisation otherwise (under auto, a GPU without SM
// activity is judged by its utilisation).
func (tm timing) busy(labels map[string]string, v samples) InputSeries {
	if tm.cfg.Policy.GPUSignal == config.SignalSMActive {
		return series(GPUSMActive, labels, v)
	}
	return series(GPUUtilization, labels, v)
}

func processes(labels map[string]string, n, procs int) InputSeries {
	return series(GPUProcesses, with(labels, "gpu", "0"), constant(float64(procs), n))
}

func collector(labels map[string]string, name string, n int, ok bool) InputSeries {
	v := 0.0
	if ok {
		v = 1
	}
	return series(CollectorSuccess, with(labels, "collector", name), constant(v, n))
}

// idleScenarios exercise RotaServerIdle: a server is idle only after the whole window of
// complete data under every threshold, held for one pass; missing, stale or partial data and
// any GPU use never count as idle.
func idleScenarios(tm timing) []scenario {
	p := tm.cfg.Policy.Idle
	w := time.Duration(p.Window)
	s := tm.step
	n := tm.n(2*w + 10*max(tm.pass, s))
	idleU, busyU := p.CPUThreshold/4, (1+p.CPUThreshold)/2
	idle := func(node string) []InputSeries { return tm.cpu(nodeLabels(node, tm.cpuPool), busyFor(idleU, n)) }
	// The CPU counters first give a rate one step after they start, so a server reporting from
	// t has its window covered at t + window.
	fires := func(t time.Duration) []check { return tm.from(tm.held(t, tm.pass)) }
	never := tm.never(tm.held(w, tm.pass) + 4*s) // an idle server fires by then
	half := time.Duration(tm.n(w/2)) * s

	late := busyFor(idleU, n)
	for i := range tm.n(half) {
		late[i] = cpuStep{}
	}
	// flap: busy from half to spellEnd; rate() carries it up to two steps past its end.
	spellEnd := half + max(4*s, time.Duration(tm.n(w/5))*s)
	flap := busyFor(idleU, n)
	for i := tm.n(half) + 1; i <= tm.n(spellEnd); i++ {
		flap[i].busy = busyU
	}
	// reboot: the last sample at half, a stale marker, nothing, then counters from zero.
	back := half + 5*s
	reboot := busyFor(idleU, n)
	reboot[tm.n(half)+1] = cpuStep{kind: stale}
	for i := tm.n(half) + 2; i < tm.n(back); i++ {
		reboot[i] = cpuStep{}
	}
	reboot[tm.n(back)].restart = true
	// blip: two scrapes missed at half (a stale marker, then nothing), the counters going on.
	// rate() bridges the gap from the samples around it; the window starts again all the same,
	// and its first step is the second scrape after the gap (the first one's interval spans it).
	blipBack := half + 3*s
	blip := busyFor(idleU, n)
	blip[tm.n(half)+1] = cpuStep{kind: stale}
	blip[tm.n(half)+2] = cpuStep{}
	// reset: counters from zero at one sample, none missing, once the server already fires.
	reset := busyFor(idleU, n)
	resetAt := tm.held(w, tm.pass) + 4*s
	reset[tm.n(resetAt)].restart = true

	// Every server's pool declares its GPUs (rota's own series): none in pool cpu.
	cpu := func(name, why string, series []InputSeries, checks []check) scenario {
		l := nodeLabels(name, tm.cpuPool)
		return scenario{name: "idle: " + name + ": " + why, alert: AlertIdle, labels: l, series: append(series, declared(l, n, 0)), checks: checks}
	}
	gpuNode := func(name, why string, gpus int, extra []InputSeries, checks []check) scenario {
		l := nodeLabels(name, tm.gpuPool)
		return scenario{name: "idle: " + name + ": " + why, alert: AlertIdle, labels: l,
			series: append(append(tm.cpu(l, busyFor(idleU, n)), declared(l, n, gpus)), extra...), checks: checks}
	}
	gl := func(name string) map[string]string { return nodeLabels(name, tm.gpuPool) }
	gthr := p.GPUThreshold
	// gpugap: the GPU's readings stop at half (a stale marker) and come back five steps later.
	gap := constant(0, n)
	gap[tm.n(half)+1] = sample{kind: stale}
	for i := tm.n(half) + 2; i < tm.n(back); i++ {
		gap[i] = sample{}
	}
	return []scenario{
		cpu("idle", "under the CPU threshold from the start fires once the window is covered and held", idle("idle"), fires(w)),
		cpu("busy", "over the CPU threshold", tm.cpu(nodeLabels("busy", tm.cpuPool), busyFor(busyU, n)), never),
		cpu("cpuedge", "CPUs at the threshold are not under it", tm.cpu(nodeLabels("cpuedge", tm.cpuPool), busyFor(p.CPUThreshold, n)), never),
		cpu("cpuunder", "CPUs just under the threshold", tm.cpu(nodeLabels("cpuunder", tm.cpuPool), busyFor(p.CPUThreshold*0.98, n)), fires(w)),
		cpu("late", "reporting from half a window in", tm.cpu(nodeLabels("late", tm.cpuPool), late), fires(half+w)),
		cpu("flap", "a busy spell starts the window again", tm.cpu(nodeLabels("flap", tm.cpuPool), flap), []check{
			{tm.held(spellEnd+w-s, tm.pass), false},
			{tm.held(spellEnd+2*s+w, tm.pass), true},
			{tm.held(spellEnd+6*s+w, tm.pass), true},
		}),
		cpu("reboot", "a stale gap and counters from zero start the window again", tm.cpu(nodeLabels("reboot", tm.cpuPool), reboot), fires(back+w)),
		cpu("blip", "two missed scrapes start the window again, though rate() bridges them", tm.cpu(nodeLabels("blip", tm.cpuPool), blip), fires(blipBack+w)),
		cpu("reset", "a counter reset with no sample missing changes nothing", tm.cpu(nodeLabels("reset", tm.cpuPool), reset),
			append(fires(w), check{resetAt + s, true}, check{resetAt + 4*s, true})),
		cpu("memfail", "a failing collector is partial data, never idle",
			append(idle("memfail"), collector(nodeLabels("memfail", tm.cpuPool), "memory", n, false)), never),
		cpu("nonvml", "a CPU server whose GPU collector finds no NVML is still idle",
			append(idle("nonvml"), collector(nodeLabels("nonvml", tm.cpuPool), "gpu", n, false), collector(nodeLabels("nonvml", tm.cpuPool), "cpu", n, true),
				series(GPUDevices, nodeLabels("nonvml", tm.cpuPool), constant(0, n))), fires(w)),
		gpuNode("gpuidle", "every GPU under the threshold", 2, append(tm.gpu(gl("gpuidle"), n, gthr/5, gthr/5), processes(gl("gpuidle"), n, 0)), fires(w)),
		gpuNode("gpuedge", "a GPU at the threshold is not under it", 1, tm.gpu(gl("gpuedge"), n, gthr), never),
		gpuNode("gpuunder", "a GPU just under the threshold", 1, tm.gpu(gl("gpuunder"), n, gthr*0.98), fires(w)),
		gpuNode("gpubusy", "one busy GPU of two", 2, tm.gpu(gl("gpubusy"), n, (1+gthr)/2, 0), never),
		gpuNode("gpulost", "a GPU without a reading is partial data", 2,
			[]InputSeries{series(GPUDevices, gl("gpulost"), constant(2, n)), tm.busy(with(gl("gpulost"), "gpu", "0"), constant(0, n))}, never),
		gpuNode("gpuprocs", "a compute process on an unused GPU", 1, append(tm.gpu(gl("gpuprocs"), n, 0), processes(gl("gpuprocs"), n, 1)), never),
		gpuNode("gpugap", "a gap in the GPU's readings starts the window again", 1,
			[]InputSeries{series(GPUDevices, gl("gpugap"), constant(1, n)), tm.busy(with(gl("gpugap"), "gpu", "0"), gap)},
			fires(max(w, back+w-s))),
		gpuNode("gpufail", "the GPU collector fails on a server with GPUs", 1,
			append(tm.gpu(gl("gpufail"), n, 0), collector(gl("gpufail"), "gpu", n, false)), never),
		twoFleets(tm, "twin", n, idleU, busyU, fires(w)),
	}
}

// twoFleets is two fleets in one Prometheus (every target labelled with its fleet), each with
// a server named node in a pool of the same name: the first fleet's idle, the second's busy.
// The first fires, named by its fleet; the second's readings are never added to it.
func twoFleets(tm timing, node string, n int, idleU, busyU float64, checks []check) scenario {
	a, b := with(nodeLabels(node, tm.cpuPool), FleetLabel, "site-a"), with(nodeLabels(node, tm.cpuPool), FleetLabel, "site-b")
	series := append(append(tm.cpu(a, busyFor(idleU, n)), declared(a, n, 0)), append(tm.cpu(b, busyFor(busyU, n)), declared(b, n, 0))...)
	return scenario{name: "idle: " + node + ": two fleets' servers of one name in pools of one name, one idle, the other busy",
		alert: AlertIdle, labels: a, series: series, checks: checks}
}

// coverageScenarios hold GPU servers to the GPUs their pool declares: a server is idle only
// with readings for every declared GPU over the whole window and now; RotaGPUReadingsMissing
// names the ones whose readings fall short (by how many), and a failed scrape ends the idle
// alert at the first evaluation after its stale markers.
func coverageScenarios(tm timing) []scenario {
	p := tm.cfg.Policy.Idle
	w := time.Duration(p.Window)
	s := tm.step
	fired := tm.held(w, tm.pass)
	n := tm.n(2*w+2*tm.pass) + 10
	idleU, gthr := p.CPUThreshold/4, p.GPUThreshold
	server := func(node, pool string, gpus int, extra ...InputSeries) []InputSeries {
		l := nodeLabels(node, pool)
		return append(append(tm.cpu(l, busyFor(idleU, n)), declared(l, n, gpus)), extra...)
	}
	now := tm.held(0, tm.pass)
	never := tm.never(fired + 4*s)
	idle := func(node, pool, why string, series []InputSeries, checks []check) scenario {
		return scenario{name: "coverage: " + node + ": " + why, alert: AlertIdle, labels: nodeLabels(node, pool), series: series, checks: checks}
	}
	missing := func(node, why string, count int, series []InputSeries, checks []check) scenario {
		return scenario{name: "coverage: " + node + ": " + why, alert: AlertGPUsMissing, labels: nodeLabels(node, tm.gpuPool),
			value: fmt.Sprint(count), series: series, checks: checks}
	}
	gl := func(node string) map[string]string { return nodeLabels(node, tm.gpuPool) }
	noCollector := server("nocollector", tm.gpuPool, 2, collector(gl("nocollector"), "cpu", n, true))
	noNVML := server("nonvml", tm.gpuPool, 2, series(GPUDevices, gl("nonvml"), constant(0, n)), collector(gl("nonvml"), "gpu", n, false))
	fewer := server("fewer", tm.gpuPool, 2, tm.gpu(gl("fewer"), n, gthr/5)...) // NVML sees one GPU of the two declared, and reads it
	// gap: GPU 1 of 2 without readings from a stale marker at half a window for four steps.
	half := time.Duration(tm.n(w/2)) * s
	stop, back := half+s, half+5*s
	gapped := constant(gthr/5, n)
	gapped[tm.n(stop)] = sample{kind: stale}
	for i := tm.n(stop) + 1; i < tm.n(back); i++ {
		gapped[i] = sample{}
	}
	gap := server("gap", tm.gpuPool, 2, series(GPUDevices, gl("gap"), constant(2, n)),
		tm.busy(with(gl("gap"), "gpu", "0"), constant(gthr/5, n)),
		tm.busy(with(gl("gap"), "gpu", "1"), gapped))
	// The gap is missing readings at the evaluations from stop to back-s: it fires only if the
	// hold is shorter than that.
	gapMissing := tm.never(back - s)
	if tm.held(stop, tm.pass) <= back-s {
		gapMissing = []check{{tm.held(stop, tm.pass), true}, {back, false}}
	}
	// beyond: the pool declares one GPU, the server reports two, and the second has the gap
	// above: a GPU beyond the profile is held to at every step of the window too.
	beyond := server("beyond", tm.gpuPool, 1, series(GPUDevices, gl("beyond"), constant(2, n)),
		tm.busy(with(gl("beyond"), "gpu", "0"), constant(gthr/5, n)),
		tm.busy(with(gl("beyond"), "gpu", "1"), gapped))
	// gone and gpugone: a scrape fails once the server already fires: every series of its
	// exporter, or its GPU series alone, get stale markers.
	ends := fired + 4*s
	staleFrom := func(v samples) samples {
		v = append(samples{}, v[:tm.n(ends)]...)
		return append(append(v, sample{kind: stale}), gaps(n-tm.n(ends)-1)...)
	}
	goneSteps := busyFor(idleU, n)
	goneSteps[tm.n(ends)] = cpuStep{kind: stale}
	for i := tm.n(ends) + 1; i <= n; i++ {
		goneSteps[i] = cpuStep{}
	}
	gone := append(tm.cpu(nodeLabels("gone", tm.cpuPool), goneSteps), declared(nodeLabels("gone", tm.cpuPool), n, 0))
	gpugone := server("gpugone", tm.gpuPool, 1,
		series(GPUDevices, gl("gpugone"), staleFrom(constant(1, n))),
		tm.busy(with(gl("gpugone"), "gpu", "0"), staleFrom(constant(0, n))))
	endsChecks := []check{{fired, true}, {ends - s, true}, {ends, false}}
	// frozen: the counters stop moving at ends (the exporter sends its last values again):
	// once the rate window holds no rise, the share is 0/0, no reading.
	frozenSteps := busyFor(idleU, n)
	for i := tm.n(ends) + 1; i <= n; i++ {
		frozenSteps[i] = cpuStep{kind: present, frozen: true}
	}
	frozen := append(tm.cpu(nodeLabels("frozen", tm.cpuPool), frozenSteps), declared(nodeLabels("frozen", tm.cpuPool), n, 0))
	// twice: the exporter is scraped by two jobs, and NVML sees one GPU of the two declared:
	// each job's reading of it is still one GPU's.
	twice := []InputSeries{declared(gl("twice"), n, 2)}
	for _, job := range []string{"rota-exporter", "again"} {
		l := with(gl("twice"), "job", job)
		twice = append(append(twice, tm.cpu(l, busyFor(idleU, n))...), tm.gpu(l, n, gthr/5)...)
	}
	// nan: one GPU of two reads NaN throughout.
	nan := server("nan", tm.gpuPool, 2, series(GPUDevices, gl("nan"), constant(2, n)),
		tm.busy(with(gl("nan"), "gpu", "0"), constant(gthr/5, n)),
		tm.busy(with(gl("nan"), "gpu", "1"), constant(math.NaN(), n)))
	// handover: rota's leader changes once the server fires: the new leader's first scrape
	// lands before the old one's series go stale, so rota's fleet series come twice
	// (apart by instance) for three steps.
	handover := func(node, pool string, gpus int, extra ...InputSeries) []InputSeries {
		l := nodeLabels(node, pool)
		return append(append(tm.cpu(l, busyFor(idleU, n)), declaredHandover(l, n, tm.n(ends), gpus)...), extra...)
	}
	return []scenario{
		idle("handover", tm.gpuPool, "two rotas' fleet series at a leader handover: still idle",
			handover("handover", tm.gpuPool, 2, tm.gpu(gl("handover"), n, gthr/5, gthr/5)...), append(tm.from(fired), check{ends, true}, check{ends + 4*s, true})),
		missing("handover", "two rotas' fleet series at a leader handover: still missing", 2,
			handover("handover", tm.gpuPool, 2, collector(gl("handover"), "cpu", n, true)), append(tm.from(now), check{ends, true}, check{ends + 4*s, true})),
		idle("cpu", tm.cpuPool, "no GPUs declared and no GPU collector: idle", server("cpu", tm.cpuPool, 0), tm.from(fired)),
		idle("full", tm.gpuPool, "every declared GPU read: idle", server("full", tm.gpuPool, 2, tm.gpu(gl("full"), n, gthr/5, gthr/5)...), tm.from(fired)),
		idle("nocollector", tm.gpuPool, "GPUs declared and no GPU series: never idle", noCollector, never),
		missing("nocollector", "GPUs declared and no GPU series are missing readings", 2, noCollector, tm.from(now)),
		idle("nonvml", tm.gpuPool, "NVML did not start on a server with GPUs declared: never idle", noNVML, never),
		missing("nonvml", "NVML did not start: the declared GPUs are missing readings", 2, noNVML, tm.from(now)),
		{name: "coverage: nonvml: a failing GPU collector is partial data where GPUs are declared", alert: AlertCollectorFailing,
			labels: gl("nonvml"), series: noNVML, checks: tm.from(now)},
		idle("fewer", tm.gpuPool, "one GPU read of two declared: never idle", fewer, never),
		missing("fewer", "one GPU read of two declared", 1, fewer, tm.from(now)),
		idle("undeclared", tm.cpuPool, "no series from rota of what its pool declares: never idle",
			tm.cpu(nodeLabels("undeclared", tm.cpuPool), busyFor(idleU, n)), never),
		idle("gap", tm.gpuPool, "one GPU of two without readings for a while starts the window again", gap, tm.from(max(fired, tm.held(back+w-s, tm.pass)))),
		missing("gap", "one GPU of two without readings for a while, held for one pass", 1, gap, gapMissing),
		idle("beyond", tm.gpuPool, "a GPU beyond the one declared without readings for a while starts the window again", beyond,
			tm.from(max(fired, tm.held(back+w-s, tm.pass)))),
		idle("gone", tm.cpuPool, "a failed scrape ends the alert at the first evaluation after", gone, endsChecks),
		idle("gpugone", tm.gpuPool, "GPU series gone stale end the alert at the first evaluation after", gpugone, endsChecks),
		idle("frozen", tm.cpuPool, "CPU counters that stop moving end the alert once the rate window holds no rise", frozen,
			[]check{{fired, true}, {ends + s, true}, {ends + 4*s, false}, {ends + 6*s, false}}),
		idle("twice", tm.gpuPool, "scraped by two jobs, one GPU read of two declared: never idle", twice, never),
		missing("twice", "scraped by two jobs, one GPU read of two declared", 1, twice, tm.from(now)),
		idle("nan", tm.gpuPool, "a GPU reading NaN: never idle", nan, never),
		missing("nan", "a GPU reading NaN has no reading", 1, nan, tm.from(now)),
	}
}

// slowEvaluation is how many scrape intervals apart evaluation.test.yml evaluates the rules:
// Prometheus' evaluation_interval may be longer than the scrape interval (deploy/prometheus
// once shipped 30s against 15s scrapes).
const slowEvaluation = 2

// evaluationScenarios run with the rules evaluated every slowEvaluation scrape intervals: the
// windows evaluate the raw series at every scrape all the same, so a GPU busy at one scrape
// between two evaluations, or a missed scrape of a GPU or of the CPUs between them, starts the
// window again (a window over recorded series, which have points at the evaluations only,
// would see none of them).
func evaluationScenarios(tm timing) []scenario {
	p := tm.cfg.Policy.Idle
	w, s := time.Duration(p.Window), tm.step
	every := slowEvaluation * s
	fires := func(t time.Duration) []check { return tm.from(heldEvery(t, tm.pass, every)) }
	// b is a step between two evaluations, about half a window in.
	b := time.Duration(tm.n(w/2)|1) * s
	n := tm.n(heldEvery(b+s+w, tm.pass, every)) + 8
	idleU, gthr := p.CPUThreshold/4, p.GPUThreshold
	// Every server's pool declares its GPUs: none in pool cpu, one in pool gpu.
	cpu := func(node, why string, steps []cpuStep) scenario {
		l := nodeLabels(node, tm.cpuPool)
		return scenario{name: "evaluation: " + node + ": " + why, alert: AlertIdle, labels: l,
			series: append(tm.cpu(l, steps), declared(l, n, 0)), checks: fires(w)}
	}
	gpuNode := func(node, why string, util samples, at time.Duration) scenario {
		l := nodeLabels(node, tm.gpuPool)
		return scenario{name: "evaluation: " + node + ": " + why, alert: AlertIdle, labels: l,
			series: append(tm.cpu(l, busyFor(idleU, n)), declared(l, n, 1), series(GPUDevices, l, constant(1, n)),
				tm.busy(with(l, "gpu", "0"), util)),
			checks: fires(at)}
	}
	busy := constant(gthr/5, n)
	busy[tm.n(b)] = val((1 + gthr) / 2)
	gpuGap := constant(gthr/5, n)
	gpuGap[tm.n(b)] = sample{kind: stale}
	// cpugap: a missed scrape at b: no reading at b, nor at the scrape after (its interval
	// spans the gap).
	cpuGap := busyFor(idleU, n)
	cpuGap[tm.n(b)] = cpuStep{kind: stale}
	gapped := cpu("cpugap", "a missed CPU scrape between evaluations starts the window again", cpuGap)
	gapped.checks = fires(b + s + w)
	return []scenario{
		cpu("idle", "idle from the start fires once the window is covered and held", busyFor(idleU, n)),
		gpuNode("gpublip", "one busy GPU scrape between evaluations starts the window again", busy, b+w),
		gpuNode("gpugap", "one missed GPU scrape between evaluations starts the window again", gpuGap, b+w),
		gapped,
	}
}

// signalScenarios exercise the backlog, underuse and telemetry alerts.
func signalScenarios(tm timing) []scenario {
	return slices.Concat(backlogScenarios(tm), underuseScenarios(tm), telemetryScenarios(tm), fleetLabelScenarios(tm))
}

// fleetLabelScenarios: a fleet whose rota is labelled and whose exporter is not (or the other
// way round) fires RotaFleetLabelMismatch after its hold, naming both values, also beside
// another fleet's correctly labelled server of the same name; two correctly labelled fleets
// and one unlabelled fleet do not.
func fleetLabelScenarios(tm timing) []scenario {
	n := tm.n(tm.held(0, 3*tm.pass)) + 8
	fires, never := tm.from(tm.held(0, 3*tm.pass)), tm.never(tm.held(0, 3*tm.pass)+4*tm.step)
	// server is rota's series of a server and its exporter's, each with its fleet ("": none).
	server := func(node, rota, exporter string) []InputSeries {
		l := func(fleet string) map[string]string {
			if fleet == "" {
				return nodeLabels(node, tm.cpuPool)
			}
			return with(nodeLabels(node, tm.cpuPool), FleetLabel, fleet)
		}
		return []InputSeries{series(FleetNodePowered, l(rota), constant(1, n)), series(NodeCPUs, l(exporter), constant(4, n))}
	}
	sc := func(node, why string, labels map[string]string, series []InputSeries, checks []check) scenario {
		return scenario{name: "fleet label: " + node + ": " + why, alert: AlertFleetLabel, labels: labels, series: series, checks: checks}
	}
	return []scenario{
		sc("mis", "rota's target labelled, the exporter's not", with(nodeLabels("mis", tm.cpuPool), FleetLabel, "site-a"), server("mis", "site-a", ""), fires),
		sc("rev", "the exporter's target labelled, rota's not", with(nodeLabels("rev", tm.cpuPool), "exporter_fleet", "site-b"), server("rev", "", "site-b"), fires),
		sc("same", "one fleet mislabelled beside another's server of the same name, labelled", with(nodeLabels("same", tm.cpuPool), FleetLabel, "site-a"),
			append(server("same", "site-a", ""), server("same", "site-b", "site-b")...), fires),
		sc("same-rev", "the other way round, beside labelled fleets before and after it", with(nodeLabels("same-rev", tm.cpuPool), "exporter_fleet", "site-b"),
			slices.Concat(server("same-rev", "", "site-b"), server("same-rev", "site-a", "site-a"), server("same-rev", "site-c", "site-c")), fires),
		sc("twin", "two fleets labelled on every target", nil, append(server("twin", "site-a", "site-a"), server("twin", "site-b", "site-b")...), never),
		sc("one", "one fleet labelled on no target", nil, server("one", "", ""), never),
	}
}

// backlogScenarios: more than queued_jobs for backlog.for fires; the threshold itself, a queue
// that flaps or one that drains does not (or no longer).
func backlogScenarios(tm timing) []scenario {
	b := tm.cfg.Policy.Backlog
	s := tm.step
	at := tm.held(0, time.Duration(b.For))
	n := tm.n(at) + 8
	q := float64(b.QueuedJobs)
	labels := func(class string) map[string]string { return map[string]string{"pool": "gpu", "class": class} }
	queue := func(class string, v samples) []InputSeries {
		return []InputSeries{series(ScalerPendingJobs, labels(class), v)}
	}
	// Jobs of a deferrable class outside its window wait on purpose: rota counts them apart.
	deferred := func(class string, pending, deferred float64) []InputSeries {
		return append(queue(class, constant(pending, n)), series(ScalerDeferredJobs, labels(class), constant(deferred, n)))
	}
	drainAt := at + 6*s
	drains := append(constant(2*q+2, tm.n(drainAt)-1), constant(0, n-tm.n(drainAt))...)
	out := []scenario{
		{name: "backlog: deferred work outside its window waits on purpose", alert: AlertBacklog, labels: labels("night"),
			series: deferred("night", 2*q+2, 2*q+2), checks: tm.never(at + 4*s)},
		{name: "backlog: more than the threshold beside deferred work", alert: AlertBacklog, labels: labels("night"),
			series: deferred("night", 2*q+2, q+1), checks: tm.from(at)},
		{name: "backlog: more than the threshold for backlog.for", alert: AlertBacklog, labels: labels("heavy"),
			series: queue("heavy", constant(q+1, n)), checks: tm.from(at)},
		{name: "backlog: exactly the threshold is not more", alert: AlertBacklog, labels: labels("light"),
			series: queue("light", constant(q, n)), checks: tm.never(at + 4*s)},
		{name: "backlog: a queue that drains stops firing", alert: AlertBacklog, labels: labels("medium"),
			series: queue("medium", drains), checks: append(tm.from(at), check{drainAt - s, true}, check{drainAt, false})},
		{name: "backlog: one fleet's queue above the threshold, another fleet's of the same pool and class empty", alert: AlertBacklog,
			labels: with(labels("heavy"), FleetLabel, "site-a"),
			series: []InputSeries{
				series(ScalerPendingJobs, with(labels("heavy"), FleetLabel, "site-a"), constant(q+1, n)),
				series(ScalerPendingJobs, with(labels("heavy"), FleetLabel, "site-b"), constant(0, n)),
				series(ScalerDeferredJobs, with(labels("heavy"), FleetLabel, "site-b"), constant(0, n)),
			}, checks: tm.from(at)},
	}
	if b.For > 0 {
		flap := make(samples, n+1)
		for i := range flap {
			flap[i] = val(0)
			if i%2 == 0 {
				flap[i] = val(q + 1)
			}
		}
		out = append(out, scenario{name: "backlog: a queue above and below at every step never holds", alert: AlertBacklog,
			labels: labels("batch"), series: queue("batch", flap), checks: tm.never(at + 4*s)})
	}
	return out
}

// underuseScenarios: a GPU server working with mean GPU use under the threshold over the whole
// window, with readings from every GPU its pool declares, fires; one that uses its GPUs, one
// that is idle, or one with a declared GPU that never reads does not.
func underuseScenarios(tm timing) []scenario {
	p := tm.cfg.Policy
	u := time.Duration(p.Underuse.Window)
	thr := p.Underuse.GPUThreshold
	// The GPU gauges cover the window from its first step.
	at := tm.held(u-tm.step, tm.pass)
	n := tm.n(at) + 8
	l := func(node string) map[string]string { return nodeLabels(node, tm.gpuPool) }
	// Every server's pool declares gpus GPUs (rota's own series).
	sc := func(node, why string, gpus int, series []InputSeries, checks []check) scenario {
		return scenario{name: "underuse: " + node + ": " + why, alert: AlertUnderused, labels: l(node),
			series: append(series, declared(l(node), n, gpus)), checks: checks}
	}
	out := []scenario{
		sc("under", "GPUs at a fifth and four fifths of the threshold with a process", 2,
			append(tm.gpu(l("under"), n, thr/5, thr*4/5), processes(l("under"), n, 1)), tm.from(at)),
		sc("cpuwork", "unused GPUs while the CPUs are busy", 1,
			append(tm.gpu(l("cpuwork"), n, 0), tm.cpu(l("cpuwork"), busyFor((1+p.Idle.CPUThreshold)/2, n))...), tm.from(at)),
		sc("used", "GPU use over the threshold", 1, append(tm.gpu(l("used"), n, (1+thr)/2), processes(l("used"), n, 1)), tm.never(at+4*tm.step)),
		sc("idle", "an idle server is idle, not underused", 1,
			append(append(tm.gpu(l("idle"), n, thr/10), processes(l("idle"), n, 0)), tm.cpu(l("idle"), busyFor(p.Idle.CPUThreshold/4, n))...), tm.never(at+4*tm.step)),
		// unread: two GPUs declared, one found and read: the mean of one says nothing of the other.
		sc("unread", "a declared GPU without readings all window", 2,
			append(tm.gpu(l("unread"), n, thr/5), processes(l("unread"), n, 1)), tm.never(at+4*tm.step)),
	}
	// burst: full use at the start of the window, then none: the mean still counts.
	if steps := int(0.6 * thr * float64(tm.n(u))); steps >= 1 {
		burst := append(constant(1, steps-1), constant(0, n-steps)...)
		out = append(out, sc("burst", "a burst of full use within a mean under the threshold", 1,
			[]InputSeries{series(GPUDevices, l("burst"), constant(1, n)), tm.busy(with(l("burst"), "gpu", "0"), burst), processes(l("burst"), n, 1)},
			tm.from(at)))
	}
	return out
}

// telemetryScenarios: a powered server without fresh data, and one with partial data, fire
// after one pass; a server reporting, booting or off does not.
func telemetryScenarios(tm timing) []scenario {
	a := time.Duration(tm.cfg.Policy.Telemetry.MaxAge)
	s := tm.step
	last := a + 4*s
	n := tm.n(tm.held(last+a, tm.pass)) + 8
	l := func(node string) map[string]string { return nodeLabels(node, tm.cpuPool) }
	fleet := func(node string, powered float64, state string) []InputSeries {
		return []InputSeries{
			series(FleetNodePowered, l(node), constant(powered, n)),
			series(FleetNodeState, with(l(node), "state", state), constant(1, n)),
		}
	}
	reporting := func(node string, upTo int, staleAfter bool) InputSeries {
		v := append(constant(4, upTo), gaps(n-upTo-1)...)
		if staleAfter {
			v[upTo+1] = sample{kind: stale}
		}
		return series(NodeCPUs, l(node), v)
	}
	sc := func(alert, node, why string, series []InputSeries, checks []check) scenario {
		return scenario{name: "telemetry: " + node + ": " + why, alert: alert, labels: l(node), series: series, checks: checks}
	}
	now := tm.held(0, tm.pass)
	stops := tm.held(last+a, tm.pass)
	gl := nodeLabels("lost", tm.gpuPool)
	return []scenario{
		sc(AlertTelemetryMissing, "ok", "powered and reporting", append(fleet("ok", 1, "on"), reporting("ok", n, false)), tm.never(stops+4*s)),
		sc(AlertTelemetryMissing, "silent", "powered and never reporting", fleet("silent", 1, "on"), tm.from(now)),
		sc(AlertTelemetryMissing, "stopped", "its target went down (stale markers) after the max age",
			append(fleet("stopped", 1, "on"), reporting("stopped", tm.n(last), true)), tm.from(stops)),
		sc(AlertTelemetryMissing, "frozen", "its samples stopped without stale markers, after the max age",
			append(fleet("frozen", 1, "on"), reporting("frozen", tm.n(last), false)), tm.from(stops)),
		sc(AlertTelemetryMissing, "booting", "booting has no exporter yet", fleet("booting", 1, "booting"), tm.never(stops+4*s)),
		sc(AlertTelemetryMissing, "off", "off sends nothing", fleet("off", 0, "off"), tm.never(stops+4*s)),
		sc(AlertCollectorFailing, "memfail", "a failing collector", []InputSeries{collector(l("memfail"), "memory", n, false)}, tm.from(now)),
		{name: "telemetry: lost: a GPU without a reading", alert: AlertCollectorFailing, labels: gl,
			series: []InputSeries{series(GPUDevices, gl, constant(2, n)), tm.busy(with(gl, "gpu", "0"), constant(0, n))},
			checks: tm.from(now)},
		sc(AlertCollectorFailing, "nonvml", "no NVML on a CPU server is no failure",
			[]InputSeries{collector(l("nonvml"), "gpu", n, false), series(GPUDevices, l("nonvml"), constant(0, n))}, tm.never(stops+4*s)),
	}
}

// scalerScenarios exercise the boot, scaler and power alerts.
func scalerScenarios(tm timing) []scenario {
	return append(append(append(bootScenarios(tm), rotaScenarios(tm)...), powerScenarios(tm)...), haScenarios(tm)...)
}

// bootScenarios: a server booting past its pool's boot timeout fires (the pools the config
// names and any other), and so does one powering on, then booting, past it in all (the boot is
// one spell: the alert carries no state); one that comes up in time does not, one rota marked
// failed fires after one pass.
func bootScenarios(tm timing) []scenario {
	s := tm.step
	pools := append([]config.Pool{}, tm.cfg.Pools...)
	pools = append(pools, config.Pool{Name: "unlisted", BootTimeout: model.Duration(config.DefaultBootTimeout)})
	var out []scenario
	for _, pl := range pools {
		at := tm.held(0, time.Duration(pl.BootTimeout))
		n := tm.n(at) + 4
		l := map[string]string{"node": "slow", "pool": pl.Name}
		out = append(out, scenario{name: "boot: slow: booting past the boot timeout of pool " + pl.Name, alert: AlertBootTimeout,
			labels: l, series: []InputSeries{series(FleetNodeState, with(l, "state", "booting"), constant(1, n))}, checks: tm.from(at)})
	}
	timeout := time.Duration(pools[len(pools)-1].BootTimeout)
	n := tm.n(timeout) + 4
	state := func(node, st string) map[string]string {
		return map[string]string{"node": node, "pool": "unlisted", "state": st}
	}
	// steps is 1 from step from to step to-1, then a stale marker at to (as Prometheus writes
	// when rota drops the series of a state left).
	steps := func(from, to int) samples {
		v := append(gaps(from-1), constant(1, to-from-1)...)
		return append(append(v, sample{kind: stale}), gaps(n-to-1)...)
	}
	// handoff: powering on for half the timeout, then booting.
	half := tm.n(timeout) / 2
	out = append(out, scenario{name: "boot: handoff: powering on, then booting, past the boot timeout in all", alert: AlertBootTimeout,
		labels: map[string]string{"node": "handoff", "pool": "unlisted"},
		series: []InputSeries{
			series(FleetNodeState, state("handoff", "powering_on"), steps(0, half)),
			series(FleetNodeState, state("handoff", "booting"), append(gaps(half-1), constant(1, n-half)...)),
		}, checks: tm.from(tm.held(0, timeout))})
	// quick: two steps powering on, three booting, then on.
	out = append(out, scenario{name: "boot: quick: up well within the boot timeout", alert: AlertBootTimeout,
		labels: map[string]string{"node": "quick", "pool": "unlisted"},
		series: []InputSeries{
			series(FleetNodeState, state("quick", "powering_on"), append(append(constant(1, 1), sample{kind: stale}), gaps(n-3)...)),
			series(FleetNodeState, state("quick", "booting"), steps(2, 5)),
			series(FleetNodeState, state("quick", "on"), append(gaps(4), constant(1, n-5)...)),
		}, checks: tm.never(tm.held(0, timeout) + 4*s)})
	failedAt := 3 * s
	fl := map[string]string{"node": "broken", "pool": "cpu", "state": "failed"}
	fn := tm.n(tm.held(failedAt, tm.pass)) + 4
	return append(out, scenario{name: "boot: broken: failed fires after one pass", alert: AlertFailed, labels: fl,
		series: []InputSeries{series(FleetNodeState, fl, append(gaps(tm.n(failedAt)-1), constant(1, fn-tm.n(failedAt))...))},
		checks: tm.from(tm.held(failedAt, tm.pass))})
}

// rotaScenarios: rota down, not reconciling, or blind for three passes; with two fleets'
// rotas scraped as one job (each target labelled with its fleet), every rota of one fleet
// down fires for that fleet whatever the other's do, one rota of a pair down does not; no rota
// target at all fires as one rota down does.
func rotaScenarios(tm timing) []scenario {
	s := tm.step
	stuck := 3 * tm.pass
	rota := map[string]string{"job": ScalerJob, "instance": "rota:10091"}
	down := 4 * s
	dn := tm.n(tm.held(down, stuck)) + 4
	stops := append(constant(1, tm.n(down)-1), constant(0, dn-tm.n(down))...)
	target := func(fleet, name string) map[string]string {
		return map[string]string{"job": ScalerJob, "instance": name + ":10091", FleetLabel: fleet}
	}
	siteB := []InputSeries{series("up", target("site-b", "rota-a"), constant(1, dn)), series("up", target("site-b", "rota-b"), constant(1, dn))}
	last := 5 * s
	// The last pass's timestamp, in seconds, grows with time until last, then stays.
	lastPass := make(samples, 0)
	rn := tm.n(tm.held(last+stuck+s, tm.pass)) + 4
	for i := 0; i <= rn; i++ {
		t := min(time.Duration(i)*s, last)
		lastPass = append(lastPass, val(t.Seconds()))
	}
	blind := 2 * s
	bn := tm.n(tm.held(blind, stuck)) + 4
	return []scenario{
		{name: "scaler: rota not scraped for three passes", alert: AlertScalerDown, labels: map[string]string{},
			series: []InputSeries{series("up", rota, stops)},
			checks: tm.from(tm.held(down, stuck))},
		{name: "scaler: every rota of one fleet down, another fleet's up", alert: AlertScalerDown, labels: map[string]string{FleetLabel: "site-a"},
			series: append([]InputSeries{series("up", target("site-a", "rota-a"), stops), series("up", target("site-a", "rota-b"), constant(0, dn))}, siteB...),
			checks: tm.from(tm.held(down, stuck))},
		{name: "scaler: one rota of a fleet down, its pair up", alert: AlertScalerDown, labels: map[string]string{FleetLabel: "site-a"},
			series: append([]InputSeries{series("up", target("site-a", "rota-a"), stops), series("up", target("site-a", "rota-b"), constant(1, dn))}, siteB...),
			checks: tm.never(tm.held(down, stuck) + 4*s)},
		// The target leaves service discovery: a stale marker, then no up at all.
		{name: "scaler: no rota target at all", alert: AlertScalerDown, labels: map[string]string{},
			series: []InputSeries{series("up", rota, append(append(constant(1, tm.n(down)-1), sample{kind: stale}), gaps(dn-tm.n(down)-1)...))},
			checks: tm.from(tm.held(down, stuck))},
		// time() - last is more than three passes only one step after it equals them.
		{name: "scaler: no pass finished for more than three passes", alert: AlertNotReconciling, labels: rota,
			series: []InputSeries{series(ScalerLastPassSuccess, rota, lastPass)},
			checks: tm.from(tm.held(last+stuck+s, tm.pass))},
		{name: "scaler: Prometheus unreadable for three passes", alert: AlertScalerBlind, labels: rota,
			series: []InputSeries{series(ScalerTelemetryOK, rota, append(constant(1, tm.n(blind)-1), constant(0, bn-tm.n(blind))...))},
			checks: tm.from(tm.held(blind, stuck))},
	}
}

// powerScenarios: alert_after failed power actions of one kind in one pool within the alert
// window fire, across a restart of rota (a counter reset) and adding failures and unknown
// states; one fewer does not, nor do successes, nor failures split between two fleets' pools
// of one name, and the window forgets them. Every counter
// the rule reads starts at 0, as rota creates them (success, failure and state_unknown of
// every action in every pool, at its start): increase() counts a series' first increment only
// from a sample before it.
func powerScenarios(tm timing) []scenario {
	f := tm.cfg.Policy.Failure
	s := tm.step
	k := f.AlertAfter
	window := time.Duration(f.AlertWindow)
	// The k-th failure is counted at step 3 in each scenario, as the failures of a pass land
	// in one scrape; the counters are zero at step 0, inside the window.
	at := 3 * s
	n := tm.n(window+3*s) + 2
	l := func(action, pool string) map[string]string { return map[string]string{"action": action, "pool": pool} }
	counter := func(action, pool, result string, v samples) InputSeries {
		return series(ScalerActions, with(l(action, pool), "result", result), v)
	}
	// failures is 0 up to step 2, then count.
	failures := func(count int) samples {
		return append(constant(0, 2), constant(float64(count), n-3)...)
	}
	// The alert fires at once (no hold) and while the window holds the samples the first
	// failure is counted between (steps 0 and 1 at the earliest, the restart's): up to window -
	// step. Checks of a firing alert stay within it (a short alert_window); by window + 3
	// steps the window has forgotten every failure.
	within := func(cs []check, last time.Duration) []check {
		for i := range cs {
			cs[i].at = min(cs[i].at, last)
		}
		return cs
	}
	fires := append(within(tm.from(at), window-s), check{window + 3*s, false})
	// restarted: k-1 failures at step 1, rota restarted (its counters from 0) at step 2, one
	// more failure at step 3.
	restarted := append(samples{val(0), val(float64(k - 1)), val(0)}, constant(1, n-3)...)
	out := []scenario{
		{name: fmt.Sprintf("power: %d failures within %s", k, f.AlertWindow), alert: AlertPowerActionsFails, labels: l("power_on", "gpu"),
			series: []InputSeries{counter("power_on", "gpu", "failure", failures(k))}, checks: fires},
		{name: "power: rota restarted between the failures (a counter reset)", alert: AlertPowerActionsFails, labels: l("power_off", "cpu"),
			series: []InputSeries{counter("power_off", "cpu", "failure", restarted)}, checks: fires},
		{name: "power: one failure short", alert: AlertPowerActionsFails, labels: l("power_on", "cpu"),
			series: []InputSeries{counter("power_on", "cpu", "failure", failures(k-1))}, checks: tm.never(at)},
		{name: "power: successes, aborts and dry runs are no failures", alert: AlertPowerActionsFails, labels: l("power_off", "gpu"),
			series: []InputSeries{
				counter("drain", "cpu", "success", failures(n)),
				counter("power_off", "gpu", "aborted", failures(n)),
				counter("power_off", "gpu", "dry_run", failures(n)),
			}, checks: tm.never(at)},
	}
	// A change outside rota is counted at step 2; the alert holds while the window holds the
	// count's step before it. Other pools and states, and counters that stay at 0, never fire.
	outside := func(pool, to string, v samples) InputSeries {
		return series(ScalerPowerOutside, map[string]string{"pool": pool, "to": to}, v)
	}
	once := append(samples{val(0), val(0)}, constant(1, n-2)...)
	// Two fleets in one Prometheus, each with a pool gpu: one's failures and changes are never
	// another's.
	siteA, siteB := with(l("power_on", "gpu"), FleetLabel, "site-a"), with(l("power_on", "gpu"), FleetLabel, "site-b")
	out = append(out,
		scenario{name: "power: one fleet's failures, another fleet's pool of the same name without", alert: AlertPowerActionsFails, labels: siteA,
			series: []InputSeries{
				series(ScalerActions, with(siteA, "result", "failure"), failures(k)),
				series(ScalerActions, with(siteB, "result", "failure"), constant(0, n)),
			}, checks: fires},
		scenario{name: "power: a server of one fleet powered off outside rota, none of another's", alert: AlertPowerOutside,
			labels: map[string]string{"pool": "gpu", "to": "off", FleetLabel: "site-a"},
			series: []InputSeries{
				series(ScalerPowerOutside, map[string]string{"pool": "gpu", "to": "off", FleetLabel: "site-a"}, once),
				series(ScalerPowerOutside, map[string]string{"pool": "gpu", "to": "off", FleetLabel: "site-b"}, constant(0, n)),
			}, checks: append(within(tm.from(2*s), window), check{s + window, false})},
	)
	out = append(out,
		scenario{name: "power: a server powered off outside rota", alert: AlertPowerOutside, labels: map[string]string{"pool": "gpu", "to": "off"},
			series: []InputSeries{outside("gpu", "off", once), outside("gpu", "on", constant(0, n)), outside("cpu", "off", constant(0, n))},
			checks: append(within(tm.from(2*s), window), check{s + window, false})},
		scenario{name: "power: no change outside rota", alert: AlertPowerOutside, labels: map[string]string{"pool": "cpu", "to": "on"},
			series: []InputSeries{outside("cpu", "on", constant(0, n)), outside("cpu", "off", constant(0, n))},
			checks: tm.never(4 * s)})
	if k >= 2 {
		// One failure at step 2, then k-1 unknown states at step 3: they add up to k.
		one := append(samples{val(0), val(0)}, constant(1, n-2)...)
		unknown := append(constant(0, 2), constant(float64(k-1), n-3)...)
		out = append(out, scenario{name: "power: failures and unknown states add up", alert: AlertPowerActionsFails, labels: l("resume", "gpu"),
			series: []InputSeries{counter("resume", "gpu", "failure", one), counter("resume", "gpu", "state_unknown", unknown)}, checks: fires},
			// k-1 failures in one fleet's pool gpu, one in another's: neither has k.
			scenario{name: "power: failures split between two fleets' pools of one name", alert: AlertPowerActionsFails, labels: siteA,
				series: []InputSeries{
					series(ScalerActions, with(siteA, "result", "failure"), failures(k-1)),
					series(ScalerActions, with(siteB, "result", "failure"), failures(1)),
				}, checks: tm.never(at)})
	}
	return out
}

// haScenarios: no rota of a fleet leads for the hold (fires for that fleet, whatever another
// fleet's rotas do), a failover quicker than it and one rota on bbolt (never); FlapTerms terms
// begun within the flap window in one fleet fire, one fewer, or as many split between two
// fleets, do not.
func haScenarios(tm timing) []scenario {
	s := tm.step
	hold := time.Duration(NoLeaderHold(tm.cfg))
	inst := func(fleet, name string) map[string]string {
		return map[string]string{"job": ScalerJob, "instance": name + ":10091", FleetLabel: fleet}
	}
	siteA, siteB := map[string]string{FleetLabel: "site-a"}, map[string]string{FleetLabel: "site-b"}
	lost := 3 * s
	l := tm.n(lost)
	n := tm.n(tm.held(lost, hold)) + 4
	stopped := append(constant(1, l-1), constant(0, n-l)...)
	takesOver := append(constant(0, l), constant(1, n-l-1)...)
	none := []InputSeries{
		series(HALeader, inst("site-a", "rota-a"), stopped),
		series(HALeader, inst("site-a", "rota-b"), constant(0, n)),
		series(HALeader, inst("site-a", "rota-c"), constant(0, n)),
	}
	failover := []InputSeries{none[0], series(HALeader, inst("site-a", "rota-b"), takesOver), none[2]}
	// Another fleet, scraped by the same Prometheus, whose pair leads all along.
	otherLeads := append(slices.Clone(none),
		series(HALeader, inst("site-b", "rota-a"), constant(1, n)), series(HALeader, inst("site-b", "rota-b"), constant(0, n)))
	// A follower's config differs from the first step on: for good, or for less than the span
	// (a rolling update).
	span := time.Duration(FlapSpan(tm.cfg))
	m := tm.n(tm.held(s, span)) + 6
	differs := append(constant(0, 0), constant(1, m-1)...)
	rolling := append(append(constant(0, 0), constant(1, tm.n(span)-2)...), constant(0, m-tm.n(span))...)
	// terms counts from 0, one more at each of the steps given.
	terms := func(at ...int) samples {
		out := make(samples, 0, 9)
		v := 0.0
		for i := 0; i <= 8; i++ {
			for _, a := range at {
				if a == i {
					v++
				}
			}
			out = append(out, val(v))
		}
		return out
	}
	return []scenario{
		{name: "ha: no rota leads for the hold", alert: AlertNoLeader, labels: siteA,
			series: none, checks: tm.from(tm.held(lost, hold))},
		{name: "ha: no rota of one fleet leads, another fleet's does", alert: AlertNoLeader, labels: siteA,
			series: otherLeads, checks: tm.from(tm.held(lost, hold))},
		{name: "ha: a failover within the hold", alert: AlertNoLeader, labels: siteA,
			series: failover, checks: tm.never(tm.held(lost, hold) + 4*s)},
		{name: "ha: one rota on bbolt always leads", alert: AlertNoLeader, labels: map[string]string{},
			series: []InputSeries{series(HALeader, map[string]string{"job": ScalerJob, "instance": "rota:10091"}, constant(1, n))},
			checks: tm.never(tm.held(lost, hold) + 4*s)},
		{name: fmt.Sprintf("ha: %d terms within the flap window", FlapTerms), alert: AlertLeaderFlapping, labels: siteA,
			series: []InputSeries{series(HATerms, inst("site-a", "rota-a"), terms(1, 3)), series(HATerms, inst("site-a", "rota-b"), terms(2, 4))},
			checks: tm.from(4 * s)},
		{name: "ha: one term fewer", alert: AlertLeaderFlapping, labels: siteA,
			series: []InputSeries{series(HATerms, inst("site-a", "rota-a"), terms(1, 3)), series(HATerms, inst("site-a", "rota-b"), terms(2))},
			checks: tm.never(8 * s)},
		{name: fmt.Sprintf("ha: %d terms split between two fleets", FlapTerms), alert: AlertLeaderFlapping, labels: siteA,
			series: []InputSeries{series(HATerms, inst("site-a", "rota-a"), terms(1, 3)), series(HATerms, inst("site-b", "rota-a"), terms(2, 4))},
			checks: tm.never(8 * s)},
		{name: "ha: a follower's config differs for the span", alert: AlertConfigDiffers, labels: siteB,
			series: []InputSeries{series(HAConfigDiffers, inst("site-a", "rota-b"), constant(0, m)), series(HAConfigDiffers, inst("site-b", "rota-b"), differs)},
			checks: tm.from(tm.held(s, span))},
		{name: "ha: a rolling update shorter than the span", alert: AlertConfigDiffers, labels: siteA,
			series: []InputSeries{series(HAConfigDiffers, inst("site-a", "rota-b"), rolling)},
			checks: tm.never(tm.held(s, span) + 4*s)},
	}
}
