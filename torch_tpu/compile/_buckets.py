def bucketing_plan(gm, inputs, opts):
    return None
class BucketedGraph: pass
