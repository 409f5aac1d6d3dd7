// Package english keeps kubectl's message catalogues unread. podsync speaks
// English only, but k8s.io/kubectl's get package, imported for kubectl's
// own print flags, translates its help text while the program starts, and
// reading a catalogue for that cost every run some 25 ms. Import it before
// any package of k8s.io/kubectl: Go initializes, of the packages whose
// imports are ready, the first by import path, and this one's comes before
// theirs.
package english

import "k8s.io/kubectl/pkg/util/i18n"

var unread bool

func init() {
	// An error means a catalogue was read already: only time is lost.
	_ = i18n.SetLoadTranslationsFunc(func() error {
		unread = true
		return nil
	})
}

// Unread reports whether kubectl's translations were asked for and left
// unread, as they should be once the program has started.
func Unread() bool { return unread }
