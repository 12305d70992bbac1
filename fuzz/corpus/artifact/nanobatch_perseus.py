[
[('forward', 960), ('forward', 900), ('backward', 960), ('forward', 960), ('backward', 960), ('forward', 960), ('backward', 960), ('forward', 960), ('backward', 960), ('forward', 960), ('backward', 960), ('forward', 960), ('backward', 960), ('forward', 960), ('backward', 930), ('backward', 960)],
[('forward', 930), ('backward', 960), ('forward', 930), ('backward', 930), ('forward', 930), ('backward', 930), ('forward', 930), ('backward', 930), ('forward', 930), ('backward', 930), ('forward', 930), ('backward', 930), ('forward', 930), ('backward', 930), ('forward', 930), ('backward', 960)],
]
# Iteration 84 cost change: 0.06226055795459828
# Iteration 84 total cost: 1057.215496681741
# Iteration 84 total cost with P2P: 2014.8254966817408
