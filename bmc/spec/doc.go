// Package spec holds what a BMC is to the rest of rota: its endpoint (protocol, address,
// credentials from a file or the environment, TLS) and the power state it reports. It imports
// no BMC library, so the config package, and through it the exporter, use these types without
// linking bmclib; package bmc re-exports them for its callers.
package spec
