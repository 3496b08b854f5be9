package bmc

import "github.com/prometheus/client_golang/prometheus"

// metrics are the rota_bmc_* series. Labels are bounded: protocol (ipmi, redfish), operation
// (state, on, off, off_graceful, cycle, power_reading; for requests open, state, on, off, soft,
// power_reading), result (see resultLabel and requestResult), provider (ipmitool, gofish, none,
// other).
type metrics struct {
	operations  *prometheus.CounterVec
	opDuration  *prometheus.HistogramVec
	requests    *prometheus.CounterVec
	reqDuration *prometheus.HistogramVec
	confirm     *prometheus.HistogramVec
	providers   *prometheus.CounterVec
	retries     *prometheus.CounterVec
	inflight    prometheus.Gauge
	reqInflight prometheus.Gauge
	reqWaiting  prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_bmc_operations_total",
			Help: "Power operations (state, on, off, off_graceful, cycle, power_reading) by protocol and result.",
		}, []string{"protocol", "operation", "result"}),
		opDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rota_bmc_operation_duration_seconds",
			Help:    "Time a power operation took, from call to confirmed state or error.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"protocol", "operation"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_bmc_requests_total",
			Help: "Calls made to BMCs, through bmclib (open, state, on, off, soft) and for power readings (power_reading), by protocol and result.",
		}, []string{"protocol", "operation", "result"}),
		reqDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rota_bmc_request_duration_seconds",
			Help:    "Latency of one call to a BMC.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"protocol", "operation"}),
		confirm: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rota_bmc_confirm_duration_seconds",
			Help:    "Time from a power command to the BMC reporting the target state.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"protocol", "operation"}),
		providers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_bmc_provider_requests_total",
			Help: "Successful BMC calls by the bmclib provider that answered.",
		}, []string{"protocol", "provider"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_bmc_retries_total",
			Help: "BMC calls retried after a transient failure.",
		}, []string{"protocol", "operation"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rota_bmc_operations_in_flight",
			Help: "Power operations under way (each holds its BMC's turn; a slot of the concurrency cap only while a request is out).",
		}),
		reqInflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rota_bmc_requests_in_flight",
			Help: "BMC requests out, each holding a slot of the global concurrency cap (bmc.concurrency).",
		}),
		reqWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rota_bmc_requests_waiting",
			Help: "BMC requests waiting for a slot of the global concurrency cap (bmc.concurrency), a power-on's served first.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.operations, m.opDuration, m.requests, m.reqDuration, m.confirm, m.providers, m.retries, m.inflight, m.reqInflight, m.reqWaiting)
	}
	return m
}

// requestResult is the bounded result label of one BMC call.
func requestResult(err error) string {
	if err == nil {
		return "success"
	}
	return resultLabel(err)
}
