// Package wire is the pod codec: bytes in, rows out. It reads the API
// server's answers about pods (lists, watch frames, table cells) and makes
// each pod a PodRow: whole, lean (see Lean) or packed (see Pack), with
// the server's table cells when asked for. Its one contract: a row prints
// exactly as the pod client-go's own decoding makes of the same bytes
// prints, and PodJSON writes a packed row's JSON byte for byte as
// encoding/json writes that pod.
//
// Pods are asked for as protobuf, else JSON (ListAccept, WatchAccept), as
// client-go asks for them. Protobuf is read here field by field, to keep
// only what a row needs; any answer that is not protobuf (JSON today,
// CBOR some day) is read with client-go's standard decoding and each pod
// made the row it would have been made from protobuf.
//
// No input makes it panic: bytes it cannot read are an error, and a pod
// whose metadata reads but whose other bytes do not is a *PodError naming
// it (namespace/name), which a Decoder with Skip leaves out of a list or
// watch that goes on with the other pods. A row it returns can be read in
// every representation.
package wire
