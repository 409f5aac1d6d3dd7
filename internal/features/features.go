// Package features holds podsync's feature gates, set from the
// environment the way client-go's own gates are (k8s.io/client-go/features
// reads KUBE_FEATURE_<Name>): PODSYNC_FEATURE_<Name>=true or false, the
// name spelled exactly as here. A gate not set keeps its default; a value
// strconv.ParseBool does not read is logged and ignored. The environment
// is read once, on the first question.
package features

import (
	"os"
	"strconv"
	"sync"

	"k8s.io/klog/v2"
)

// Feature names a gate.
type Feature string

// FastCodec reads the API server's pods with podsync's own decoder
// (package wire): field by field from their protobuf bytes, kept lean or
// packed. Off (PODSYNC_FEATURE_FastCodec=false), every pod is decoded by
// client-go's standard decoding and kept whole, which prints the same and
// costs more time and memory: a way to tell a bug of the decoder from any
// other.
const FastCodec Feature = "FastCodec"

// EnvPrefix starts the environment variable of every gate.
const EnvPrefix = "PODSYNC_FEATURE_"

// defaults are the known gates and their values when not set.
var defaults = map[Feature]bool{
	FastCodec: true,
}

var (
	mu      sync.Mutex
	read    bool
	enabled map[Feature]bool
)

// Enabled says whether f is on. It panics on a gate not known here, as
// client-go's gates do: that is a programming error.
func Enabled(f Feature) bool {
	mu.Lock()
	defer mu.Unlock()
	if !read {
		enabled, read = fromEnv(os.LookupEnv), true
	}
	v, ok := enabled[f]
	if !ok {
		panic("feature " + string(f) + " is not a known feature gate")
	}
	return v
}

// fromEnv is every gate's value: its default unless lookup has a value
// ParseBool reads.
func fromEnv(lookup func(string) (string, bool)) map[Feature]bool {
	out := make(map[Feature]bool, len(defaults))
	for f, def := range defaults {
		out[f] = def
		s, set := lookup(EnvPrefix + string(f))
		if !set {
			continue
		}
		v, err := strconv.ParseBool(s)
		if err != nil {
			klog.ErrorS(err, "Could not set feature gate", "feature", f, "desiredState", s)
			continue
		}
		out[f] = v
	}
	return out
}

// SetForTest sets f for a test and returns what puts it back.
func SetForTest(f Feature, v bool) (restore func()) {
	Enabled(f) // the environment is read first, so it does not override v
	mu.Lock()
	defer mu.Unlock()
	old := enabled[f]
	enabled[f] = v
	return func() {
		mu.Lock()
		defer mu.Unlock()
		enabled[f] = old
	}
}
