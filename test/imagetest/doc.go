// Package imagetest holds the fixtures the node image build's tests share
// (pkg/buildah, pkg/imagebuild, pkg/osimage): rendered MachineConfigs, base
// images pushed to a test registry, layers read back, and real cosign key
// pairs. Only tests import it.
package imagetest
