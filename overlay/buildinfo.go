package overlay

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// BuildInfo returns the up_build_info gauge, 1, labelled with the version
// (the module's when empty), the VCS commit the binary was built from and
// the Go version, as Prometheus' own build_info metrics are.
func BuildInfo(version string) prometheus.Collector {
	commit := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				commit = s.Value
			}
		}
	}
	if version == "" {
		version = "unknown"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "up_build_info",
		Help:        "Build of this up binary: always 1, labelled with version, commit and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
