// Package mcosim is an MCO stand-in for kiln's tests and local demos. It
// is NOT the Machine Config Operator and must never run against a real
// cluster. Against a real apiserver it plays, in one loop:
//
//   - the render controller: renders each pool's MachineConfigs (through a
//     Renderer, kiln's pkg/render in tests) and points the pool at the
//     rendered config;
//   - the node controller: honours maxUnavailable and pause, and sets each
//     node's desiredConfig/desiredImage annotations and MachineConfigNode
//     spec;
//   - per node, the daemon: walks MachineConfigNode's phases with parent and child
//     conditions (False → Unknown → True), cordons and uncordons the Node,
//     sets the currentConfig/currentImage/state annotations, and the pool
//     counters.
//
// Failure injection: a node labelled mcosim.kiln.dev/degrade-at=<phase>
// (a condition type such as Drained) goes Degraded at that phase, for
// rendered configs whose osImageURL contains the value of the optional
// label mcosim.kiln.dev/degrade-image. It recovers when its desired config
// changes. A pool annotated mcosim.kiln.dev/render-quirk renders with that
// quirk (KilnRenderer), so its rendered name differs from kiln's
// prediction: the drift gate's failure injection.
package mcosim
