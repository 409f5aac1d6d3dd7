package wire

import ()

// decoders are the ways a source makes rows of pods.
var decoders = []struct {
	name string
	d    Decoder
}{
	{"whole", Decoder{}},
	{"whole, managedFields kept", Decoder{KeepManagedFields: true}},
	{"lean", Decoder{Lean: true}},
	{"packed", Decoder{Pack: true}},
	{"packed, managedFields kept", Decoder{Pack: true, KeepManagedFields: true}},
}
