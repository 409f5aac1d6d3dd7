//go:build !linux

package main

import (
	"errors"
	"runtime"
	"time"
)

var errNoProc = errors.New("process statistics need Linux /proc")

func procCPU(int) (time.Duration, error) { return 0, errNoProc }
func procHWM(int) (int64, error)         { return 0, errNoProc }
func procRSS(int) (int64, error)         { return 0, errNoProc }
func availableMemory() (int64, error)    { return 0, errNoProc }
func otherAPIServers(int) []int          { return nil }

func readMachine() machine { return machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()} }

// peakMeter needs /proc: elsewhere the API server's memory is not measured.
type peakMeter struct{}

func newPeakMeter(int) *peakMeter { return nil }

func (m *peakMeter) method() string { return "" }

func (m *peakMeter) start() func() (int64, int64) {
	return func() (int64, int64) { return -1, -1 }
}
