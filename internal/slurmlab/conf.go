package slurmlab

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Conf is a cluster's slurm.conf and gres.conf. What every cluster here wants is fixed: one
// controller on localhost, auth/none and root, cons_tres by core and memory, timeouts short
// enough that a stopped slurmd is seen not responding within seconds, ReturnToService=2 (a
// node that answers again becomes usable), gpu GRES over empty files. The fields are what the
// test clusters and the lab choose differently. Write needs no test: the lab, which runs
// outside tests, writes its cluster with it too.
type Conf struct {
	// Dir holds slurm.conf, gres.conf, the controller's state, each node's spool folder, the
	// pid files and the fake GPU devices (Dir/dev).
	Dir string
	// LogDir holds slurmctld.log and slurmd-<node>.log (default Dir).
	LogDir string
	// Port is slurmctld's port.
	Port int
	// Nodes are the cluster's slurmd, each with its Port. Each Partition named gets a
	// partition of its nodes, in order of first appearance; the first is the default.
	Nodes []Node
	// CredExpire, when set, is how long a job credential stays valid (whole seconds;
	// Slurm's default when 0).
	CredExpire time.Duration
	// BackfillInterval, when set, is how often the backfill scheduler runs (whole seconds;
	// Slurm's default when 0).
	BackfillInterval time.Duration
	// JobCompLog, when set, is where Slurm records every finished job (jobcomp/filetxt).
	JobCompLog string
	// Extra lines go at the end (Slurm's power saving: SuspendProgram=..., SuspendTime=...).
	Extra []string
}

// Path is slurm.conf's path.
func (c Conf) Path() string { return filepath.Join(c.Dir, "slurm.conf") }

// Write creates the folders Slurm expects (state, spool, logs) and the fake GPU devices, then
// writes slurm.conf and gres.conf into Dir. It overwrites what an earlier Write left.
func (c Conf) Write() error {
	if c.Port == 0 {
		return fmt.Errorf("slurm.conf for %s: no slurmctld port", c.Dir)
	}
	logDir := c.LogDir
	if logDir == "" {
		logDir = c.Dir
	}
	for _, d := range []string{filepath.Join(c.Dir, "state"), filepath.Join(c.Dir, "dev"), logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	var conf bytes.Buffer
	c.writeGlobals(&conf, logDir)
	gres, err := c.writeNodes(&conf)
	if err != nil {
		return err
	}
	for _, l := range c.Extra {
		conf.WriteString(l + "\n")
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "gres.conf"), gres, 0o644); err != nil {
		return err
	}
	return os.WriteFile(c.Path(), conf.Bytes(), 0o644)
}

// writeGlobals writes the lines before the nodes.
func (c Conf) writeGlobals(conf *bytes.Buffer, logDir string) {
	fmt.Fprintf(conf, "ClusterName=lab\nSlurmctldHost=localhost\nSlurmctldPort=%d\nAuthType=auth/none\n", c.Port)
	if c.CredExpire > 0 {
		fmt.Fprintf(conf, "AuthInfo=cred_expire=%d\n", int(c.CredExpire/time.Second))
	}
	fmt.Fprintf(conf, `CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[1]s/state
SlurmdSpoolDir=%[1]s/spool/%%n
SlurmctldPidFile=%[1]s/slurmctld.pid
SlurmdPidFile=%[1]s/slurmd-%%n.pid
SlurmctldLogFile=%[2]s/slurmctld.log
SlurmdLogFile=%[2]s/slurmd-%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
`, c.Dir, logDir)
	if c.BackfillInterval > 0 {
		fmt.Fprintf(conf, "SchedulerParameters=bf_interval=%d\n", int(c.BackfillInterval/time.Second))
	}
	conf.WriteString(`SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
ReturnToService=2
SlurmdParameters=config_overrides
SlurmdTimeout=10
MessageTimeout=5
MinJobAge=5
KillWait=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
`)
	if c.JobCompLog != "" {
		fmt.Fprintf(conf, "JobCompType=jobcomp/filetxt\nJobCompLoc=%s\n", c.JobCompLog)
	}
	conf.WriteString("GresTypes=gpu\n")
}

// writeNodes writes a NodeName line per node and a PartitionName line per partition, makes
// each node's spool folder and fake GPU devices, and returns gres.conf.
func (c Conf) writeNodes(conf *bytes.Buffer) ([]byte, error) {
	var gres bytes.Buffer
	parts := map[string][]string{}
	var order []string
	for _, n := range c.Nodes {
		if n.Port == 0 {
			return nil, fmt.Errorf("slurm.conf for %s: node %s has no slurmd port", c.Dir, n.Name)
		}
		if err := os.MkdirAll(filepath.Join(c.Dir, "spool", n.Name), 0o755); err != nil {
			return nil, err
		}
		fmt.Fprintf(conf, "NodeName=%s NodeHostname=localhost NodeAddr=127.0.0.1 Port=%d CPUs=%d RealMemory=%d",
			n.Name, n.Port, n.CPUs, n.MemoryMB)
		if len(n.Features) > 0 {
			fmt.Fprintf(conf, " Feature=%s", strings.Join(n.Features, ","))
		}
		if n.GPUs > 0 {
			typ, typed := "", ""
			if n.GPUType != "" {
				typ, typed = n.GPUType+":", " Type="+n.GPUType
			}
			fmt.Fprintf(conf, " Gres=gpu:%s%d", typ, n.GPUs)
			// Fake devices: slurmd only needs files to count.
			var files []string
			for i := range n.GPUs {
				f := filepath.Join(c.Dir, "dev", n.Name+"-gpu"+strconv.Itoa(i))
				if err := os.WriteFile(f, nil, 0o644); err != nil {
					return nil, err
				}
				files = append(files, f)
			}
			fmt.Fprintf(&gres, "NodeName=%s Name=gpu%s File=%s\n", n.Name, typed, strings.Join(files, ","))
		}
		conf.WriteString(" State=UNKNOWN\n")
		for _, p := range append([]string{n.Partition}, n.AlsoIn...) {
			if _, ok := parts[p]; !ok {
				order = append(order, p)
			}
			parts[p] = append(parts[p], n.Name)
		}
	}
	for i, p := range order {
		fmt.Fprintf(conf, "PartitionName=%s Nodes=%s MaxTime=INFINITE State=UP Default=%s\n",
			p, strings.Join(parts[p], ","), map[bool]string{true: "YES", false: "NO"}[i == 0])
	}
	return gres.Bytes(), nil
}
