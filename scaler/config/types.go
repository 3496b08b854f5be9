package config

import (
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/bmc/spec"
	"github.com/rotahq/rota/internal/jobclass"
)

// Config is the whole file.
type Config struct {
	Prometheus Prometheus `yaml:"prometheus"`
	Server     Server     `yaml:"server"`
	Store      Store      `yaml:"store"`
	Jobs       Jobs       `yaml:"jobs"`
	BMC        BMCLimits  `yaml:"bmc"`
	Policy     Policy     `yaml:"policy"`
	// Classes map jobs to light / medium / heavy (or names of the user's choosing), in order:
	// a job takes the first class whose partition list names its partition, else the first whose
	// limits its shape fits.
	Classes []Class `yaml:"classes"`
	Pools   []Pool  `yaml:"pools"`
	// Accounting is how spend, savings, energy and carbon are booked: time-of-use tariffs,
	// carbon intensity per region, and who is charged for what.
	Accounting Accounting `yaml:"accounting"`
	// TelemetrySources are the fleet's own exporters (node_exporter with dcgm-exporter) that
	// pools may read instead of rota-exporter.
	TelemetrySources []TelemetrySource `yaml:"telemetry_sources"`
}

// Prometheus is where rota reads its facts (the HTTP query API; Thanos and Mimir work too).
type Prometheus struct {
	URL string `yaml:"url"`
	// Timeout bounds each query.
	Timeout model.Duration `yaml:"timeout" max:"1h"`
	// ScrapeInterval is how often Prometheus scrapes the exporters. Rate windows (4x) and the
	// resolution of window queries and rules (1x) derive from it.
	ScrapeInterval model.Duration `yaml:"scrape_interval" max:"1h"`
	// HTTPClient is prometheus/common's client config: basic auth, bearer token file, TLS, proxy.
	HTTPClient promconfig.HTTPClientConfig `yaml:"http_client"`
	// Fleet, where set, is the value of the target label fleet that rota's queries select
	// (fleet="NAME" in every selector), so several fleets in one Prometheus each read their
	// own series; empty selects none. rotactl inventory targets writes it on each target.
	Fleet string `yaml:"fleet"`
}

// Server is rota's HTTP listener: /metrics, the Alertmanager webhook and the operator API.
type Server struct {
	ListenAddress string `yaml:"listen_address"`
	// APITokenFile holds the bearer token the operator API (rotactl) must send.
	APITokenFile string `yaml:"api_token_file"`
	// WebhookTokenFile holds the bearer token Alertmanager must send.
	WebhookTokenFile string `yaml:"webhook_token_file"`
	// WebhookAuthDisabled accepts unauthenticated webhooks; it must be said explicitly.
	WebhookAuthDisabled bool `yaml:"webhook_auth_disabled"`
	// WebhookMaxBodyBytes rejects larger webhook bodies with 413.
	WebhookMaxBodyBytes int64 `yaml:"webhook_max_body_bytes"`
}

// Store is where rota keeps its state: a bbolt file (one rota), or etcd (a highly available
// pair or trio: leader election, state, and every side effect fenced by the leader's lease).
type Store struct {
	// Backend is bbolt (the default) or etcd.
	Backend string `yaml:"backend"`
	// Path is the bbolt file.
	Path string    `yaml:"path"`
	Etcd EtcdStore `yaml:"etcd"`
}

// The store backends.
const (
	BackendBolt = "bbolt"
	BackendEtcd = "etcd"
)

// EtcdStore is the etcd cluster a highly available rota keeps its state in and elects its
// leader on.
type EtcdStore struct {
	Endpoints []string `yaml:"endpoints"`
	// Fleet names the fleet; it is written under the prefix at the first start, and a rota of
	// another fleet is refused there.
	Fleet string `yaml:"fleet"`
	// Prefix is where the fleet's keys live (default /rota/FLEET).
	Prefix string `yaml:"prefix"`
	// Name is this rota's name in the election (default: the host name).
	Name string `yaml:"name"`
	// AdvertiseURL is where this rota's API answers, for the followers to name to a caller
	// whose write they refuse.
	AdvertiseURL string `yaml:"advertise_url"`
	// LeaseTTL is the leader's lease: a leader cut off from etcd stops within it; another
	// takes over within twice it.
	LeaseTTL       model.Duration `yaml:"lease_ttl" max:"1h"`
	DialTimeout    model.Duration `yaml:"dial_timeout" max:"1h"`
	RequestTimeout model.Duration `yaml:"request_timeout" max:"1h"`
	// TLS is prometheus/common's: ca_file, cert_file, key_file, server_name,
	// insecure_skip_verify.
	TLS          promconfig.TLSConfig `yaml:"tls_config"`
	Username     string               `yaml:"username"`
	PasswordFile string               `yaml:"password_file"`
}

// Jobs chooses the job-manager adapter.
type Jobs struct {
	// Adapter is one of none, exec, slurm, kubernetes.
	Adapter    string         `yaml:"adapter"`
	Exec       ExecJobs       `yaml:"exec"`
	Slurm      SlurmJobs      `yaml:"slurm"`
	Kubernetes KubernetesJobs `yaml:"kubernetes"`
	// Timeout bounds each call to the job manager.
	Timeout model.Duration `yaml:"timeout" max:"1h"`
	// WatchInterval is how often the adapter's pending-work watch (where it has one) reads the
	// waiting work; new work runs a pass at once. 0 turns the watch off.
	WatchInterval model.Duration `yaml:"watch_interval" max:"1h"`
}

// ExecJobs runs user programs in Slurm's SuspendProgram/ResumeProgram style. Each program gets
// the node name as its argument (state and demand get none) and answers JSON on stdout.
type ExecJobs struct {
	State  string `yaml:"state_command"`
	Demand string `yaml:"demand_command"`
	Drain  string `yaml:"drain_command"`
	Resume string `yaml:"resume_command"`
	// Watch, optional, prints the ids of the work waiting, for the pending-work watch.
	Watch string `yaml:"watch_command"`
	// Move requeues jobs off a node (policy.moves); it gets the node, the servers the jobs may
	// not go back to (comma-separated) and the job ids.
	Move string `yaml:"move_command"`
}

// SlurmJobs drives Slurm's own commands.
type SlurmJobs struct {
	// Conf is SLURM_CONF for the commands; empty uses Slurm's default.
	Conf string `yaml:"conf"`
	// BinDir holds sinfo, squeue, scontrol; empty searches PATH.
	BinDir string `yaml:"bin_dir"`
	// Requeue allows requeueing requeueable jobs: policy.moves needs it.
	Requeue bool `yaml:"requeue"`
	// Weights sets each node's Slurm weight from its pool's hourly cost when rota starts, so
	// Slurm fills the cheapest servers first (see `rotactl slurm weights` for slurm.conf).
	Weights bool `yaml:"weights"`
}

// KubernetesJobs reads and drives a Kubernetes cluster through its API server.
type KubernetesJobs struct {
	// Kubeconfig is the kubeconfig file to use; empty uses the in-cluster service account
	// (rota running as a pod, deploy/kubernetes/).
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context; empty uses the file's current context.
	Context string `yaml:"context"`
	// NodeLabel is the label on each Node whose value is the rota server it runs on; empty
	// maps a Node to the server of the same name.
	NodeLabel string `yaml:"node_label"`
	// GPUDeviceClasses are the DeviceClasses (dynamic resource allocation) whose devices are
	// whole GPUs: a waiting pod's claims on them count as GPUs in its shape. A claim on any
	// other class asks for the Nodes whose ResourceSlices offer its driver's devices.
	GPUDeviceClasses []string `yaml:"gpu_device_classes"`
	// DeleteEmptyDirData lets drains and moves evict pods with emptyDir volumes, whose data
	// is lost with them (kubectl drain's --delete-emptydir-data); by default such pods are
	// never evicted, and a drain waits for them.
	DeleteEmptyDirData bool `yaml:"delete_emptydir_data"`
}

// BMCLimits bound how rota talks to BMCs.
type BMCLimits struct {
	// Concurrency caps the BMC requests out at once across the fleet (see Shutdowns).
	Concurrency int `yaml:"concurrency"`
	// MinCommandInterval spaces commands to one BMC.
	MinCommandInterval model.Duration `yaml:"min_command_interval" max:"1h"`
	// OperationTimeout bounds one operation, confirmation included.
	OperationTimeout model.Duration `yaml:"operation_timeout" max:"1h"`
	// GracefulTimeout is how long a graceful power-off may take before a hard off.
	GracefulTimeout model.Duration `yaml:"graceful_timeout" max:"1h"`
	// PowerReadingInterval is how often each BMC is asked for the server's power draw
	// (Redfish Power or EnvironmentMetrics, IPMI DCMI); 0 never asks, and cost then uses the
	// pools' watts.
	PowerReadingInterval model.Duration `yaml:"power_reading_interval" max:"1h"`
}

// ShutdownsPerSlot is how many power-offs may be under way in the BMC layer per slot of
// bmc.concurrency. A slot is held only while a request is out, so many graceful shutdowns share
// one, each asking a handful of requests over a minute or two (the open, a read, the command,
// polls until off); with thousands under way the slots' queue grows with them, and at half a
// second a request each one's turn comes too rarely to finish within bmc.operation_timeout
// (bmc's BenchmarkShutdownCohort: 64 shutdowns a slot fail at 0.7 s a request). At 16 a slot a
// cohort finishes in a few minutes at requests of a second or two.
const ShutdownsPerSlot = 16

// Shutdowns is how many power-offs may be under way in the BMC layer at once; the executor
// holds the others before their last checks, and the replay queues them as it does.
func (b BMCLimits) Shutdowns() int { return ShutdownsPerSlot * max(b.Concurrency, 1) }

// Policy is how rota decides. Field names follow nomad-autoscaler where they mean the same.
type Policy struct {
	EvaluationInterval model.Duration `yaml:"evaluation_interval" max:"1h"`
	// DryRun plans, logs and exports every decision but sends no command.
	DryRun     bool       `yaml:"dry_run"`
	Idle       Idle       `yaml:"idle"`
	Backlog    Backlog    `yaml:"backlog"`
	Underuse   Underuse   `yaml:"underuse"`
	Telemetry  Telemetry  `yaml:"telemetry"`
	Cooldown   Cooldown   `yaml:"cooldown"`
	Node       NodeLimits `yaml:"node"`
	Disruption Disruption `yaml:"disruption"`
	Drain      Drain      `yaml:"drain"`
	Failure    Failure    `yaml:"failure"`
	BreakEven  BreakEven  `yaml:"break_even"`
	Spares     Spares     `yaml:"spares"`
	Forecast   Forecast   `yaml:"forecast"`
	Schedules  []Schedule `yaml:"schedules"`
	Quotas     []Quota    `yaml:"quotas"`
	// GPUSignal is what "busy" means for a GPU, in the idle and underuse rules and the
	// scaler: auto (SM activity where the GPU reports it, utilisation otherwise),
	// utilization, or sm_active.
	GPUSignal string `yaml:"gpu_signal"`
	Moves     Moves  `yaml:"moves"`
	// Storage names the storage several regions share: work whose data is on it may run in
	// any of them.
	Storage []Storage `yaml:"storage"`
}

// Idle says when a powered-on server is idle: CPU under CPUThreshold and every GPU under
// GPUThreshold for the whole Window, with nothing allocated by the job manager.
type Idle struct {
	CPUThreshold float64        `yaml:"cpu_threshold"`
	GPUThreshold float64        `yaml:"gpu_threshold"`
	Window       model.Duration `yaml:"window" max:"1w"`
}

// Backlog says when queued work should power servers on: more than QueuedJobs pending in a
// pool/class for For.
type Backlog struct {
	QueuedJobs int            `yaml:"queued_jobs"`
	For        model.Duration `yaml:"for" max:"1w"`
}

// Underuse flags a GPU server doing light work: mean GPU use under GPUThreshold for Window
// while it runs jobs.
type Underuse struct {
	GPUThreshold float64        `yaml:"gpu_threshold"`
	Window       model.Duration `yaml:"window" max:"1w"`
}

// Spares keeps warm servers in each pool for work arriving faster than a boot. With history
// (policy.forecast), the pool keeps on, idle or booting, the rise of its need within one boot
// that it learned at Quantile (for this hour of the week, and steeper while need is rising),
// waking servers to reach it. Without history, the servers the pool brought up over the last
// Window, as a rate, times its boot time, times Factor, rounded up, are kept (never woken).
// Either way at most MaxShare of the pool's servers (rounded down); MaxShare 0 keeps none.
type Spares struct {
	Quantile float64        `yaml:"quantile"`
	Window   model.Duration `yaml:"window" max:"1w"`
	Factor   float64        `yaml:"factor"`
	MaxShare float64        `yaml:"max_share"`
}

// BreakEven prices a power cycle against an idle hour, so an idle server is powered off when
// staying on is expected to cost more than a cycle. A cycle costs the energy of a boot and a
// shutdown at the pool's cost per hour; its wear, WearCost plus WearTime at the pool's cost
// per hour (wear said as the time on it is worth, whatever the pool costs); and the waiting
// it causes: the work expected to arrive during a boot, waiting one boot, at WaitPerJobHour per
// job and WaitPerGPUHour per GPU. Prices are in accounting.currency (a pool without a cost
// counts one of it per server-hour).
type BreakEven struct {
	WearCost       float64        `yaml:"wear_cost"`
	WearTime       model.Duration `yaml:"wear_time" max:"1w"`
	WaitPerJobHour float64        `yaml:"wait_per_job_hour"`
	WaitPerGPUHour float64        `yaml:"wait_per_gpu_hour"`
	// IdlePeriods: an idle server's chance of a job is read from the pool's learned idle
	// periods, by its rank in placement order, the part of the day and how long it has been
	// idle already (learn.Idle), where enough of them were seen; else from the rise of need.
	IdlePeriods bool `yaml:"idle_periods"`
}

// Forecast: the statistics rota learns (package learn) are used once a pool has MinHistory
// of them; before, idle servers are powered off after the break-even time (ski rental) and
// spares follow recent power-ons.
type Forecast struct {
	MinHistory model.Duration `yaml:"min_history" max:"1y"`
}

// Telemetry: a server whose newest sample is older than MaxAge has no data, and absent data is
// never idle.
type Telemetry struct {
	MaxAge model.Duration `yaml:"max_age" max:"1w"`
}

// Cooldown is the quiet time after a scaling action in a pool.
type Cooldown struct {
	ScaleUp   model.Duration `yaml:"scale_up" max:"1w"`
	ScaleDown model.Duration `yaml:"scale_down" max:"1w"`
}

// NodeLimits protect hardware: dwell times and a cap on power cycles per day.
type NodeLimits struct {
	MinOn           model.Duration `yaml:"min_on" max:"1w"`
	MinOff          model.Duration `yaml:"min_off" max:"1w"`
	MaxCyclesPerDay int            `yaml:"max_cycles_per_day"`
}

// Disruption is the budget for scale-down: at most PowerOffs(servers) power-offs per Window
// across the fleet, and at most Concurrent(servers) actions in flight.
type Disruption struct {
	MaxPowerOffs int `yaml:"max_power_offs"`
	// MaxPowerOffsShare scales the budget with the fleet: see PowerOffs.
	MaxPowerOffsShare float64        `yaml:"max_power_offs_share"`
	Window            model.Duration `yaml:"window" max:"1w"`
	MaxConcurrent     int            `yaml:"max_concurrent"`
	// MaxConcurrentShare scales the cap in flight with the fleet: see Concurrent.
	MaxConcurrentShare float64 `yaml:"max_concurrent_share"`
}

// PowerOffs is the power-off budget per window of a fleet of servers: MaxPowerOffs, or
// MaxPowerOffsShare of the servers (rounded down) where that is more, so a fixed count made for
// a small fleet does not hold a large one's servers on. MaxPowerOffs 0 stops power-offs
// whatever the share.
func (d Disruption) PowerOffs(servers int) int {
	if d.MaxPowerOffs == 0 {
		return 0
	}
	return max(d.MaxPowerOffs, int(d.MaxPowerOffsShare*float64(servers)))
}

// Concurrent is the cap on actions in flight in a fleet of servers: MaxConcurrent, or
// MaxConcurrentShare of the servers (rounded down) where that is more, so a large fleet's
// power-offs, a minute each, are not held to a small fleet's pace. The BMC operations they send
// are capped apart (bmc.concurrency).
func (d Disruption) Concurrent(servers int) int {
	return max(d.MaxConcurrent, int(d.MaxConcurrentShare*float64(servers)))
}

// Drain bounds how long rota waits for a draining server to empty before it gives the server
// back to the job manager (resumes it) instead of powering it off.
type Drain struct {
	Timeout model.Duration `yaml:"timeout" max:"1w"`
}

// Failure is what happens to a server that did not come up: it is Failed and retried after
// Backoff (doubling up to MaxBackoff). AlertAfter power-action failures in AlertWindow raise
// the repeated-failure alert.
type Failure struct {
	Backoff     model.Duration `yaml:"backoff" max:"1w"`
	MaxBackoff  model.Duration `yaml:"max_backoff" max:"1w"`
	AlertAfter  int            `yaml:"alert_after" max:"10000"`
	AlertWindow model.Duration `yaml:"alert_window" max:"1w"`
}

// Schedule is a recurring time-of-day window in a time zone. While active it can raise the
// floor of its pools to a share of their servers (business hours keep capacity on for
// services) and lower the backlog threshold (the night window wakes servers for batch work).
type Schedule struct {
	Name     string `yaml:"name"`
	Timezone string `yaml:"timezone"`
	// Window is the days and times (HH:MM; an end before the start runs past midnight).
	Window `yaml:",inline"`
	// Pools the window applies to; empty means all.
	Pools []string `yaml:"pools"`
	// MinOnShare keeps at least this share of each pool's servers on (rounded up).
	MinOnShare float64 `yaml:"min_on_share"`
	// BacklogQueuedJobs, when set, replaces policy.backlog.queued_jobs in the window.
	BacklogQueuedJobs *int `yaml:"backlog_queued_jobs"`
	// ProtectServices keeps the window's floor for service classes: it counts only servers
	// with no work on them.
	ProtectServices bool `yaml:"protect_services"`

	loc *time.Location
}

// Quota bounds how many servers of a pool a department's work may hold on. With Borrow, the
// department may go past MaxServers on capacity no other department is waiting for.
type Quota struct {
	Department string `yaml:"department"`
	Pool       string `yaml:"pool"`
	MaxServers int    `yaml:"max_servers" required:"true"` // 0 is a quota: wake none unless borrowing
	Borrow     bool   `yaml:"borrow"`
}

// Class is a kind of work (see jobclass.Class: the exporter reads the classes too).
type Class = jobclass.Class

// Defer is when a class's waiting work may wake servers (see jobclass.Defer).
type Defer = jobclass.Defer

// Pool is a tier of identical servers.
type Pool struct {
	Name    string  `yaml:"name"`
	Profile Profile `yaml:"profile"`
	Cost    Cost    `yaml:"cost"`
	// BootTimeout is how long a server may take from power-on to ready.
	BootTimeout model.Duration `yaml:"boot_timeout" max:"1d"`
	// Min and Max bound the servers on; Max defaults to all of them.
	Min int  `yaml:"min"`
	Max *int `yaml:"max"`
	// Labels apply to every node of the pool (region, department); a node's own win.
	Labels map[string]string `yaml:"labels"`
	Nodes  []Node            `yaml:"nodes"`
	// TelemetrySource names where the pool's utilisation comes from: rota-exporter (the
	// default) or one of telemetry_sources.
	TelemetrySource string `yaml:"telemetry_source"`
}

// Profile is what one server of a pool offers.
type Profile struct {
	CPUCores  int    `yaml:"cpu_cores"`
	Memory    Bytes  `yaml:"memory"`
	GPUs      int    `yaml:"gpus"`
	GPUModel  string `yaml:"gpu_model"`
	GPUMemory Bytes  `yaml:"gpu_memory"`
	// Network is the interconnect ("ib", "roce"); a job's constraint may ask for it as a
	// feature.
	Network string `yaml:"network"`
	// Partitions are the job-manager partitions the servers are in (empty: any); Features
	// what a job's constraint may ask of them (Slurm's node features). The GPU model and the
	// network count as features too. `rotactl slurm check` compares them with Slurm.
	Partitions []string `yaml:"partitions"`
	Features   []string `yaml:"features"`
}

// Cost is what one server costs per hour while on: Hourly (rent), or Watts at PricePerKWh or
// at the prices of a Tariff (owned). A rented server may give Watts too: then they count its
// energy and carbon, not its cost. SavesWhenOff is false for servers paid whether on or off
// (monthly rent): rota then keeps them for last when powering off, counts no saving, and books
// their rent while they are off as well.
type Cost struct {
	Hourly      float64 `yaml:"hourly"`
	Watts       float64 `yaml:"watts"`
	PricePerKWh float64 `yaml:"price_per_kwh"`
	// Tariff names one of accounting.tariffs: time-of-use prices instead of PricePerKWh.
	Tariff string `yaml:"tariff"`
	// BaseWatts is what a GPU server draws apart from its GPUs: with it, a server whose BMC
	// gives no reading is measured as BaseWatts plus its GPUs' own readings (NVML, DCGM).
	BaseWatts    float64 `yaml:"base_watts"`
	Currency     string  `yaml:"currency"`
	SavesWhenOff *bool   `yaml:"saves_when_off"`

	tariff *Tariff // resolved by validation
	rate   float64 // one Currency in accounting.currency, resolved by validation; 0: the same
}

// Node is one server.
type Node struct {
	Name string `yaml:"name"`
	// Exporter is the host:port of the server's rota-exporter (Prometheus target).
	Exporter string            `yaml:"exporter"`
	Labels   map[string]string `yaml:"labels"`
	BMC      spec.Endpoint     `yaml:"bmc"`
}
