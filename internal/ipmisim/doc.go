// Package ipmisim writes the files for a real IPMI-over-LAN BMC run by OpenIPMI's ipmi_sim,
// for tests and the lab: lan.conf (one LAN channel on 127.0.0.1, its users), the emulator's
// command file (one BMC at 0x20) and the chassis_control program that answers power requests,
// all in one folder, and the arguments that run ipmi_sim on them. Starting the process and
// waiting for it to answer are left to the caller (a test's helpers, the lab's supervisor).
package ipmisim
