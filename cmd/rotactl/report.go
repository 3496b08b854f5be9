package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/cost/report"
	"github.com/rotahq/rota/scaler/promfacts"
)

// registerReport adds `rotactl report`: a month of the books, from Prometheus.
func registerReport(app *kingpin.Application, cmds map[string]command) {
	var f struct{ month, file, url, tz, format string }
	var fileGiven bool
	c := app.Command("report", "Print a calendar month of rota's books from Prometheus: spend, saving, idle and borrowed capacity by department and pool, energy drawn and avoided, CO2 avoided.")
	c.Flag("month", "The month, YYYY-MM (default: this month, so far).").StringVar(&f.month)
	c.Flag("config.file", "rota's config: its prometheus section (url, http_client) says where to read; with --prometheus.url the default file may be missing or unreadable.").Default("/etc/rota/rota.yml").IsSetByUser(&fileGiven).StringVar(&f.file)
	checkedValue(c.Flag("prometheus.url", "Prometheus' URL, instead of the config's."), &f.url, httpURL)
	c.Flag("timezone", "The time zone of the month's bounds (an IANA name).").Default("UTC").StringVar(&f.tz)
	c.Flag("format", "Output format: table, csv or json.").Default("table").EnumVar(&f.format, "table", "csv", "json")
	cmds[c.FullCommand()] = func(ctx context.Context, e env) int {
		loc, err := time.LoadLocation(f.tz)
		if err != nil {
			fmt.Fprintf(e.stderr, "rotactl: --timezone: unknown time zone %q\n", f.tz)
			return 2
		}
		now := e.clock.Now()
		if f.month == "" {
			f.month = now.In(loc).Format("2006-01")
		}
		period, err := report.MonthPeriod(f.month, loc, now)
		if err != nil {
			fmt.Fprintln(e.stderr, "rotactl: --month:", err)
			return 2
		}
		cfg, err := config.Load(f.file)
		// The default file missing, or only the daemon's group's to read (0640 root:rota).
		defaultUnread := !fileGiven && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission))
		switch {
		case err == nil:
		case defaultUnread && f.url != "":
			// Read off rota's host, or by one not in its group: the URL is given, and the
			// config would only have added its http_client (auth, TLS).
			cfg = config.Default()
		case defaultUnread:
			fmt.Fprintf(e.stderr, "rotactl: --config.file: %v: give rota's config, or --prometheus.url\n", err)
			return 2
		default:
			fmt.Fprintln(e.stderr, "rotactl:", err)
			return 1
		}
		if f.url != "" {
			cfg.Prometheus.URL = f.url
		}
		api, err := promfacts.NewAPI(cfg.Prometheus)
		if err != nil {
			fmt.Fprintln(e.stderr, "rotactl:", err)
			return 1
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		r, err := report.Build(ctx, api, period, cfg.Prometheus.Fleet)
		if err != nil {
			fmt.Fprintln(e.stderr, "rotactl:", err)
			return 1
		}
		write := map[string]func(*report.Report) error{
			"table": func(r *report.Report) error { return r.Table(e.stdout) },
			"csv":   func(r *report.Report) error { return r.CSV(e.stdout) },
			"json":  func(r *report.Report) error { return r.JSON(e.stdout) },
		}[f.format]
		if err := write(&r); err != nil {
			fmt.Fprintln(e.stderr, "rotactl:", err)
			return 1
		}
		return 0
	}
}
