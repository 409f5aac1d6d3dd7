// Package children ends the processes a run started that would outlive it:
// credential exec plugins (and what they started) that client-go runs
// without a context, so that one that does not answer is left running when
// podsync ends.
package children
