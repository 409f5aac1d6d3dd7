//go:build !linux

package children

// Adopt does nothing where processes cannot be adopted.
func Adopt() {}

// Kill does nothing where descendants cannot be listed.
func Kill() {}
