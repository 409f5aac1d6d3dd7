package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sample is one watcher's live heap after a collection, with the number of
// changes the churn had made by then.
type sample struct {
	// segment numbers the spell between API server restarts.
	segment int
	changes int64
	heap    uint64
}

var profilingAt = regexp.MustCompile(`podsync: profiling at http://(\S+)/debug/pprof/`)

// heapAfterGC asks podsync's pprof endpoint (PODSYNC_PPROF) for its heap
// profile after a collection and reads the live heap (HeapAlloc) from the
// runtime statistics that the text form ends with.
func heapAfterGC(ctx context.Context, addr string) (uint64, error) {
	body, err := get(ctx, "http://"+addr+"/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read the heap profile of %s: %w", addr, err)
	}
	return 0, fmt.Errorf("no HeapAlloc in the heap profile of %s", addr)
}

// saveProfile writes the heap profile (after a collection) to dir/name.
func saveProfile(ctx context.Context, addr, dir, name string) error {
	body, err := get(ctx, "http://"+addr+"/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	defer body.Close()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("save the heap profile: %w", err)
	}
	if _, err := io.Copy(f, body); err != nil {
		_ = f.Close()
		return fmt.Errorf("save the heap profile: %w", err)
	}
	return f.Close()
}

func get(ctx context.Context, url string) (io.ReadCloser, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("get %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("get %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("get %s: %s", url, resp.Status)
	}
	return cancelOnClose{resp.Body, cancel}, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	defer c.cancel()
	return c.ReadCloser.Close()
}

// slope is the Theil–Sen estimate of the bytes the live heap gains per
// change: the median of the slopes between every two samples of the same
// segment (a restart moves the heap by a step that is not growth with the
// changes). A heap sample after a collection can still hold something in
// flight, an outlier that would tilt a least-squares fit; the median is
// not moved by it.
func slope(samples []sample) float64 {
	var slopes []float64
	for i, a := range samples {
		for _, b := range samples[i+1:] {
			if b.segment == a.segment && b.changes != a.changes {
				slopes = append(slopes, (float64(b.heap)-float64(a.heap))/float64(b.changes-a.changes))
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	slices.Sort(slopes)
	return slopes[len(slopes)/2]
}
