package config

import "github.com/rotahq/rota/internal/size"

// Bytes is a size that YAML may give as a plain number or with a base-2 unit: 512GiB, 80GB
// (read as GiB, as in Prometheus' own flags), 1TiB. It is package size's, which the job
// classes the exporter reads are written in too.
type Bytes = size.Bytes
