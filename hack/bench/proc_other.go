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
func otherAPIServers(int) []int          { return nil }

func readMachine() machine { return machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()} }
