[
[('forward', 1320), ('forward', 930), ('backward', 1200), ('forward', 1230), ('backward', 1200), ('forward', 1230), ('backward', 1200), ('forward', 1230), ('backward', 1200), ('forward', 1230), ('backward', 1200), ('forward', 1230), ('backward', 1200), ('forward', 1230), ('backward', 930), ('backward', 1260)],
[('forward', 1320), ('backward', 1260), ('forward', 1110), ('backward', 1080), ('forward', 1110), ('backward', 1080), ('forward', 1110), ('backward', 1080), ('forward', 1110), ('backward', 1080), ('forward', 1110), ('backward', 1080), ('forward', 1110), ('backward', 1080), ('forward', 1320), ('backward', 1260)],
]
# Iteration 1392 cost change: 0.584064764108394
# Iteration 1392 total cost: 1453.7322380641658
# Iteration 1392 total cost with P2P: 2409.302238064166
