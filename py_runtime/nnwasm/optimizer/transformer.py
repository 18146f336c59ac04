def fuse_layer_norm(ctx):
    return 0


def fuse_gelu(ctx):
    return 0
