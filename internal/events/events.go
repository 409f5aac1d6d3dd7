// Package events reads the fields of a Kubernetes Event that the old
// (core/v1 lastTimestamp, count) and new (series, eventTime) event APIs
// spell differently.
package events

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Time is when the event was last seen, taking the first field set
// of the old (lastTimestamp) and new (series, eventTime) event APIs.
func Time(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.FirstTimestamp.IsZero():
		return ev.FirstTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}

// Count is how often the event happened (1 when not counted), from
// the old (count) or new (series) event API.
func Count(ev *corev1.Event) int32 {
	switch {
	case ev.Series != nil && ev.Series.Count > 0:
		return ev.Series.Count
	case ev.Count > 0:
		return ev.Count
	}
	return 1
}
