// Command kiln-steps is the multi-call binary behind every step of kiln's
// Tekton Tasks: one subcommand per stage.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kiln-dev/kiln/pkg/bootimage"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/render"
	"github.com/kiln-dev/kiln/pkg/report"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/signing"
	"github.com/kiln-dev/kiln/pkg/step"
)

// commands are listed in pipeline order; --help prints them that way.
var commands = []step.Command{
	{Name: step.StageRender, Summary: "render the pool's MachineConfigs as MCO does", New: render.NewStep},
	{Name: step.StageKmodBuild, Summary: "build the day-0 kernel-module image (ModuleDay0 build)", New: func() step.Runner { return &kmod.BuildOptions{} }},
	{Name: step.StageKmodSign, Summary: "sign the kernel modules in the kmod image (ModuleDay0 sign)", New: func() step.Runner { return &kmod.SignOptions{} }},
	{Name: step.StageImageBuild, Summary: "build the layered OS image on the base image", New: func() step.Runner { return &osimage.BuildOptions{} }},
	{Name: step.StageImageSign, Summary: "sign the image and attach SLSA provenance with cosign", New: func() step.Runner { return &signing.SignOptions{Predict: render.PredictFromWorkspace} }},
	{Name: step.StageVerify, Summary: "verify the image against a containers policy.json", New: func() step.Runner { return &signing.VerifyOptions{} }},
	{Name: step.StageRollout, Summary: "roll the image out to the pool through MCO", New: func() step.Runner { return &rollout.StepOptions{} }},
	{Name: step.StageBootImages, Summary: "update the MachineSets' boot images", New: func() step.Runner { return &bootimage.Options{} }},
	{Name: step.StageReport, Summary: "summarise the run: per-node table, events", New: func() step.Runner { return &report.Options{} }},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := step.Main(ctx, "kiln-steps", commands, os.Args[1:], step.Streams{Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
