"""The offline matcher's lexicons, per language: stop words (with greetings
and politeness), chat abbreviations, concepts (comma-separated words or
phrases -> one concept term; the phrases of the "" concept are dropped, like
stop words), generic verbs that weigh less (light), and word families a
suffix stripper cannot join (stems). Data only; `matching.profile` prepares
them for lookup. Grow them with care: every word added changes answers in
every agent of that language."""

_EN_STOP = """a about above after again all also am an and any anybody anyone anything are
aren as at be because been before being both but by can cant could couldnt did didnt do does
doesnt doing dont each either else even ever every few for from get gets getting got had has
have having he her here hers him his i id if ill im in into is isnt it its itself ive just
kindly know let lets like ll me might mine more most much my myself need needs no nor not now
of off ok okay on once only or other our ours out over own please really same she should so
some something still such sure than that thats the their them then there theres these they
this those through to too up us very want wanted wanna was we were what whats which while
who whom why will with would yes yet you your youre yours yourself hi hello hey hiya heya yo
dear thanks thank cheers guys folks team question wondering wonder hope sorry excuse btw
anyway lol haha hehe pls plz thx also tell help maybe possible way go one come take make
instead right how bye goodbye great awesome perfect cool nice sir madam mate dude bro doctor
today tonight tomorrow yesterday later soon already forever everything nothing someone somebody
thing things stuff nearby near around where""".split()

_PT_STOP = """a ao aos as ate com como da das de dela dele deles do dos e ela ele eles em entre
era essa essas esse esses esta estao estava estou eu foi ha isso isto ja la mais mas me meu
minha minhas meus muito na nas nao nem no nos nossa nosso num numa o os ou para pela pelas
pelo pelos por pra pro qual quais que quem se sem ser seu sua suas seus so sobre sim ta
tambem te tem tenho ter teu tua um uma umas uns vai vc vcs voce voces vou aqui ai ali oi
ola ei tudo bem beleza blz obrigado obrigada obg valeu vlw favor pf pfv gente pessoal amigo
amiga queria gostaria saber poderia pode podem posso consigo consegue fazer faz faco
fazem fazemos fica ficar
ficou seria onde kkk rs haha tipo entao agora quero quer preciso precisava desejo quanto
quantos quanta quantas todo toda todos todas comigo contigo conosco sao dessa desse
disso nessa nesse nisso deste desta neste nesta aquele aquela sei sabe veio vem vir
funciona funcionando funcionar tchau otimo perfeito legal show doutor doutora senhor senhora
moco moca hoje amanha ontem depois
logo ainda nada algo coisa coisas alguem""".split()

_ES_STOP = """a al algo algun alguna como con cual cuales de del el ella ellos en entre es esa
ese esta estan estas este esto estoy fue ha hay la las le les lo los me mi mis mucho muy mas
no nos nuestro nuestra o os para pero por porque pues que quien se ser si sin sobre su sus
te tengo tiene tienen tienes tu tus un una unos uno y ya yo usted ustedes vosotros puedo
puede pueden puedes podeis podemos quiero quisiera saber hacer hago hace
ayuda ayudar ayudan ayudais
hacen haceis hacemos soy voy hola buenas buenos gracias muchas favor porfa
saludos oye jaja ok vale bueno dale donde aqui alli cuanto cuanta cuantos cuantas necesito
gustaria doy da das todo toda todos todas funciona funcionar adios chao genial perfecto doctor
doctora senor senora joven estuvo estaba estar
hoy ayer ahora luego despues todavia nada cosa cosas alguien""".split()

_EN_SLANG = {
    "u": "you", "ur": "your", "r": "are", "ya": "you", "thnx": "thanks", "ty": "thanks",
    "hrs": "hours", "hr": "hour", "mins": "minutes", "tmrw": "tomorrow", "tmr": "tomorrow",
    "wknd": "weekend", "appt": "appointment", "info": "information", "wheres": "where is",
    "xray": "x ray", "xrays": "x rays", "b4": "before", "pic": "photo", "pics": "photos",
    "wat": "what", "wut": "what", "gf": "gluten free", "wifi": "wi fi",
}  # fmt: skip
_PT_SLANG = {
    "q": "que", "tb": "tambem", "tbm": "tambem", "pq": "porque", "qnto": "quanto",
    "qto": "quanto", "qnt": "quanto", "qndo": "quando", "qdo": "quando", "qnd": "quando",
    "hj": "hoje", "td": "tudo", "msg": "mensagem", "n": "nao", "eh": "e", "p": "para",
    "to": "estou", "tava": "estava", "cade": "onde esta", "kd": "onde esta", "nf": "nota fiscal",
    "ctz": "certeza", "fds": "fim de semana", "add": "adicionar", "dps": "depois",
    "wifi": "wi fi",
}  # fmt: skip
_ES_SLANG = {
    "q": "que", "k": "que", "xq": "porque", "pq": "porque", "tb": "tambien",
    "tmb": "tambien", "xfa": "por favor", "d": "de", "finde": "fin de semana",
    "wifi": "wi fi",
}  # fmt: skip

_EN_CONCEPTS = {
    "@price": "price, prices, pricing, cost, costs, fee, fees, charge, charges, charged, rate, "
    "rates, expensive, cheap, quote, free, how much",
    "@time": "when, eta, time, how long, how much time, how soon, how many days, how early, "
    "how fast, how quick, how quickly, turnaround, "
    "in advance, how far in advance, ahead of time, beforehand, too late, notice, ready",
    "@hours": "hours, opening, open, opens, close, closes, closing, closed, what time",
    "@deliver": "deliver, delivers, delivery, deliveries, delivering, ship, ships, shipping, "
    "shipment, arrive, arrives, arrived, arrival",
    "gluten": "gluten free, celiac, coeliac, celiacs, coeliacs",
    # Verbs with a particle, written apart, hyphenated (split into words) or joined.
    "checkin": "checkin, check in",
    "checkout": "checkout, check out",
    "pickup": "pickup, pick up, pick",
    "dropoff": "dropoff, drop off",
    "signup": "signup, sign up",
    "login": "login, log in",
    "takeaway": "takeaway, take away",
    "@area": "area, areas, zone, zones, region, regions, neighbourhood, neighborhood, radius, "
    "coverage, how far",
    "@book": "book, booking, reserve, reservation, reservations, appointment, appointments, "
    "make an appointment, book an appointment, schedule an appointment, put aside, set aside, "
    "any slots, a slot, free slot, fit me in, squeeze me in",
    "@job": "hiring, vacancy, vacancies, job opening, job openings, career, careers, work for you",
    "@fear": "afraid, scared, terrified, nervous, anxious, anxiety, fear, phobia",
    "@companion": "friend, friends, boyfriend, girlfriend, wife, husband, guest, guests, companion",
    "@human": "talk to a person, speak to a person, talk to a human, speak to a human, "
    "talk to someone, speak to someone, real person, human agent, talk to an agent, "
    "speak to an agent",
    "@urgent": "emergency, emergencies, urgent, urgently, asap",
    "@location": "address, location, located, where are you, where is the, street, avenue, "
    "how do i get there, how to get there",
    "@cancel": "cancel, cancellation, cancelled, canceled, call off, called off, cant make it, "
    "wont make it",
    "@refund": "refund, refunds, reimburse, reimbursement, money back",
    "@home": "home, homes, house, apartment, apartments, condo, my place, doorstep",
    "@medicine": "medicine, medicines, medication, medications, meds",
    "@plan": "plan, plans, subscription, subscriptions, subscribe, membership, memberships, "
    "member, members",
    "@discount": "discount, discounts, deal, deals, promo, promotion, promotions",
    "@pay": "pay, payment, payments, paying, paid, card, cards, cash, credit card, debit card, "
    "contactless, paypal, instalments, installments, financing, payment methods, "
    "payment method, payment options, ways to pay",
    # Cards that are not a way to pay.
    "@contact": "phone, phone number, telephone, call you, call us, whatsapp, email, e mail, "
    "contact",
    "@invoice": "invoice, invoices, receipt, receipts",
    "@gift": "gift, gifts, present, gift wrap, gift wrapping, wrapping",
    "@lift": "lift, lifts, elevator, elevators",
    "@access": "wheelchair, accessible, accessibility, disabled, disability, ramp",
    "@insurance": "insurance, insured, insure, insurer",
    "@trial": "trial, trial class, trial lesson, free trial, free class, taster, taster class",
    "@wholesale": "wholesale, in bulk, bulk",
    "@secondhand": "second hand, secondhand, pre owned, refurbished",
    "@stock": "in stock, out of stock, stock, sold out, back in stock, restock",
    "@park": "parking, car park, parking lot, parking space, where to park, park my car",
    "giftcard": "gift card, gift cards, gift voucher, gift vouchers",
    "loyalty": "loyalty card, loyalty cards, loyalty",
    "keycard": "key card, key cards, keycard",
    "@repair": "repair, repairs, repaired, repairing, fix, fixes, fixed, fixing, mend",
    "@defect": "broken, broke, damaged, defective, faulty, cracked, torn, ripped, "
    "not working, doesnt work, stopped working, hole, holes, scratch, scratched, scratches",
    "@clothes": "clothes, clothing, garment, garments, outfit, outfits",
    "@car": "car, cars, auto, autos, automobile, automobiles",
    "@flat": "flat tire, flat tires, flat tyre, flat tyres, puncture, punctures, punctured",
    "@vegan": "vegan, vegans, plant based, dairy free, no dairy, without dairy, lactose free",
    "@dinein": "eat in, dine in, eat there, eat here, sit in, sit down, seating, seats",
    "@age": "how old, age, ages, years old, minimum age",
    "@kid": "kid, kids, child, children, toddler, toddlers, pediatric, paediatric, son, sons, "
    "daughter, daughters, baby, babies",
    "@pet": "pet, pets, dog, dogs, puppy, puppies, cat, cats, kitten, kittens",
    "wifi": "wi fi, internet, wireless",
    "@day": "monday, mondays, tuesday, tuesdays, wednesday, wednesdays, thursday, thursdays, "
    "friday, fridays, saturday, saturdays, sunday, sundays, weekend, weekends, weekday, weekdays",
    "@event": "event, events, party, parties, celebration, celebrations, cater, catering",
    "@class": "class, classes, course, courses, lesson, lessons, workshop, workshops, teach, "
    "teaching",
    "@student": "student, students, university, college",
    "@owner": "owner, owners, own, owns, owned, founder, founded",
    "@track": "track, tracking, where is my",
    "@size": "size, sizes, sizing, how big",
    "@complaint": "rude, horrible, worst, disgusting, unacceptable, dirty, "
    "useless, ridiculous, disappointed, disappointing, complaint, complain, angry",
    "@praise": "amazing, loved, excellent, fantastic, wonderful, delicious",
    "@wrong": "wrong, incorrect, mistake, mistaken, missing, forgot, forgotten, you forgot to, "
    "they forgot to, he forgot to, she forgot to, "
    "charged twice, charged me twice, double charged, charged double",
    "": "good morning, good afternoon, good evening, good night, thank you, i forgot to, "
    "forgot to, quick question, how are you, by the way, see you, see ya, talk soon",
}
_PT_CONCEPTS = {
    "@price": "preco, precos, valor, custa, custam, custo, cobra, cobram, cobrar, taxa, caro, "
    "barato, gratis, gratuito, gratuita, quanto e, quanto fica, quanto sai, custaria, custariam, "
    "de graca",
    "@time": "quando, prazo, prazos, demora, demoram, demorar, quanto tempo, quantos dias, "
    "em quanto tempo, que dia, antecedencia, com antecedencia, pronto, pronta, prontos, prontas",
    "@hours": "horario, horarios, abre, abrem, fecha, fecham, aberto, aberta, que horas",
    "@deliver": "entrega, entregas, entregar, entregam, entregamos, envio, envia, enviam, "
    "enviar, manda, mandam, mandar, chegar, chega, chegam, chegou, chegada",
    "@area": "regiao, regioes, bairro, bairros, cidades",
    "@book": "reserva, reservar, agendar, agendo, agendamento, marcar, marco, marcar um horario, "
    "agendar um horario, marcar horario, agendar horario, meu horario, encaixe, encaixar",
    "@job": "emprego, empregos, vaga de emprego, vagas de emprego, curriculo, contratando, "
    "contratam, trabalhar ai, trabalhar com voces",
    "@fear": "medo, nervoso, nervosa, ansiedade, ansioso, ansiosa, pavor, fobia",
    "@companion": "amigo, amiga, amigos, amigas, namorado, namorada, esposa, marido, convidado, "
    "convidada, convidados, acompanhante",
    "@human": "falar com uma pessoa, falar com alguem, falar com um atendente, "
    "falar com atendente, falar com um humano, pessoa de verdade, atendimento humano",
    "@urgent": "emergencia, emergencias, urgencia, urgencias, urgente",
    "@location": "endereco, localizacao, onde fica, onde ficam, onde e a, onde e o, "
    "onde voces estao, rua, avenida, av, como chegar",
    "@cancel": "cancelar, cancelo, cancela, cancelamento, anular, anulo, desmarcar, desmarco, "
    "remarcar, remarco, reagendar",
    "@refund": "reembolso, estorno, dinheiro de volta",
    "@home": "casa, domicilio, residencia, apartamento, ape",
    "@medicine": "remedio, remedios, medicamento, medicamentos, medicacao, medicacoes, medicina",
    "@plan": "plano, planos, assinatura, assinaturas, assinar, assinante",
    "@discount": "desconto, descontos, promocao, promocoes",
    "@pay": "pagar, pagamento, pagamentos, pago, pagando, cartao, cartoes, dinheiro, pix, "
    "boleto, debito, credito, parcela, parcelas, parcelar, parcelo, parcelado, parcelamento, "
    "parcelamos, sem juros, transferencia, formas de pagamento, forma de pagamento, "
    "meios de pagamento, meio de pagamento",
    "valepresente": "vale presente, cartao presente",
    "@contact": "telefone, fone, numero de telefone, ligar, whatsapp, zap, wpp, email, e mail, "
    "contato",
    "@invoice": "nota fiscal, notas fiscais, nota, recibo, recibos, cupom fiscal",
    "@gift": "presente, presentes, embrulho, embrulhar, papel de presente, para presente",
    "@lift": "elevador, elevadores",
    "@access": "cadeirante, cadeira de rodas, acessivel, acessibilidade, deficiente, rampa",
    "@insurance": "seguro, seguros, segurado, segurada, seguradora, convenio, convenios, "
    "plano de saude",
    "@trial": "aula experimental, aula teste, aula de teste, aula gratis, aula gratuita, "
    "experimental",
    "@wholesale": "atacado, no atacado, revenda, revender",
    "@secondhand": "usado, usados, usada, usadas, seminovo, seminovos, segunda mao",
    "@stock": "estoque, esgotado, esgotada, esgotados, reposicao",
    "@park": "estacionamento, estacionar, estaciono, onde parar, vaga de estacionamento",
    "fidelidade": "cartao fidelidade, fidelidade",
    "@repair": "conserto, consertos, consertar, conserta, consertam, reparo, reparos, reparar, "
    "arrumar, arruma, arrumam",
    "@defect": "quebrado, quebrada, defeito, defeitos, defeituoso, defeituosa, estragado, "
    "estragada, rasgado, rasgada, nao funciona, parou de funcionar, rasgou, arranhado, arranhada, "
    "amassado, amassada",
    "@clothes": "roupa, roupas, peca de roupa, pecas de roupa, vestuario",
    "@car": "carro, carros, automovel, automoveis",
    "@flat": "pneu furado, pneus furados, furou o pneu, furou meu pneu, pneu murcho",
    "@vegan": "vegano, vegana, veganos, veganas, sem lactose, zero lactose",
    "@dinein": "comer ai, comer aqui, comer no local, consumir no local, lugar para sentar, "
    "mesas, mesinhas",
    "@age": "idade, idades, anos de idade, idade minima",
    "@kid": "crianca, criancas, infantil, filho, filha, filhos, filhas, bebe, bebes",
    "@pet": "pet, pets, cachorro, cachorros, cachorra, cao, caes, gato, gatos, gata, animais, "
    "bicho, bichos",
    "gluten": "sem gluten, celiaco, celiaca, celiacos",
    "@day": "segunda, terca, quarta, quinta, sexta, sabado, sabados, domingo, domingos, "
    "fim de semana, feriado, feriados",
    "@event": "evento, eventos, festa, festas, comemoracao, confraternizacao",
    "@class": "aula, aulas, curso, cursos, workshop, workshops",
    "@student": "estudante, estudantes, universitario, universitaria, universitarios",
    "@owner": "dono, dona, donos, donas, fundou, fundado, fundada, fundador, fundadora",
    "wifi": "wi fi",
    "@track": "rastrear, rastreio, rastreamento, acompanhar, acompanho, onde esta meu, "
    "onde esta minha",
    "@size": "tamanho, tamanhos, medida, medidas, numeracao",
    "@complaint": "pessimo, pessima, horrivel, grosso, grossa, grosseiro, grosseira, lerdo, "
    "lerdos, ruim, absurdo, ridiculo, sujo, suja, decepcionado, decepcionada, reclamacao",
    "@praise": "adorei, amei, maravilhoso, maravilhosa, excelente",
    "@wrong": "errado, errada, errados, erradas, incorreto, incorreta, engano, esqueceram, "
    "esqueceu, esqueci, cobrado duas vezes, cobraram duas vezes, cobrou duas vezes",
    "": "bom dia, boa tarde, boa noite, tudo bem, por favor, com licenca, ate mais, ate logo, "
    "esqueci de",
}
_ES_CONCEPTS = {
    "@price": "precio, precios, cuesta, cuestan, costo, coste, cobran, cobrar, cobra, tarifa, "
    "caro, barato, gratis, gratuito, gratuita, cuanto sale, cuanto vale, cuanto es, gastos, "
    "costaria, costarian",
    "@time": "cuando, plazo, tarda, tardan, demora, cuanto tiempo, cuantos dias, antelacion, "
    "con antelacion, anticipacion, con anticipacion, listo, lista, listos, listas",
    "@hours": "horario, horarios, abren, abre, abierto, abiertos, abierta, cierran, cierra, "
    "cerrado, a que hora",
    "@deliver": "envio, envios, enviar, envian, entrega, entregas, entregar, llegar, llega, "
    "llegan, llegada, mandan, mandar, mandais",
    "@area": "zona, zonas, region, barrio, barrios",
    "@book": "reservar, reserva, reservo, agendar, agendo, cita, citas, pedir cita, sacar cita, "
    "agendar cita, pedir hora, apartar, aparto, apartan, hueco, huecos",
    "@job": "empleo, empleos, vacante, vacantes, contratando, curriculum, trabajo para, "
    "trabajar con ustedes, trabajar con vosotros, trabajar ahi",
    "@fear": "miedo, nervioso, nerviosa, nervios, ansiedad, ansioso, ansiosa, panico, fobia",
    "@companion": "amigo, amiga, amigos, amigas, novio, novia, pareja, esposa, esposo, invitado, "
    "invitada, invitados, acompanante",
    "@human": "hablar con una persona, hablar con alguien, hablar con un humano, "
    "hablar con un agente, persona real, atencion humana",
    "@urgent": "emergencia, emergencias, urgencia, urgencias, urgente",
    "@location": "direccion, ubicacion, ubicados, ubicada, ubicado, donde queda, donde estan, "
    "donde esta el, donde esta la, donde estais, donde se encuentra, donde se encuentran, "
    "calle, avenida, av, como llegar",
    "@cancel": "cancelar, cancelo, cancelacion, anular, anulo, anulacion, de baja, dar de baja",
    "@refund": "reembolso, devolucion, dinero de vuelta",
    "@home": "casa, domicilio, apartamento",
    "@medicine": "medicamento, medicamentos, medicina, medicinas, remedio, remedios",
    "@plan": "plan, planes, membresia, membresias, suscripcion, suscripciones, socio, socios",
    "@discount": "descuento, descuentos, oferta, ofertas, promocion",
    "@pay": "pagar, pago, pagos, pagando, tarjeta, tarjetas, efectivo, debito, credito, "
    "transferencia, meses sin intereses, sin intereses, bizum, paypal, formas de pago, "
    "forma de pago, metodos de pago, metodo de pago, medios de pago",
    "tarjetaregalo": "tarjeta regalo, tarjetas regalo, tarjeta de regalo",
    "@contact": "telefono, numero de telefono, llamar, llamo, whatsapp, correo, email, e mail, "
    "contacto",
    "@invoice": "factura, facturas, recibo, recibos, ticket, comprobante",
    "@gift": "regalo, regalos, envolver, envoltorio, para regalo",
    "@lift": "ascensor, ascensores, elevador, elevadores",
    "@access": "silla de ruedas, accesible, accesibilidad, discapacidad, discapacitado, rampa",
    "@insurance": "seguro, seguros, asegurado, asegurados, asegurada, aseguradas, asegurar, "
    "aseguradora",
    "@trial": "clase de prueba, clase prueba, clase gratis, clase muestra, prueba gratis",
    "@wholesale": "al por mayor, mayoreo, mayorista, mayoristas",
    "@secondhand": "usado, usados, usada, usadas, segunda mano, reacondicionado, seminuevo",
    "@stock": "stock, agotado, agotada, agotados, existencias",
    "@repair": "reparar, reparan, reparo, reparacion, reparaciones, arreglar, arreglan, arreglo, "
    "arreglos, arreglais",
    "@defect": "roto, rota, rotos, rotas, rompio, defectuoso, defectuosa, defecto, danado, "
    "danada, no funciona, no enciende, no prende, dejo de funcionar, agujero, agujeros, rayado, "
    "rayada, abollado, abollada",
    "@clothes": "ropa, prenda, prendas, vestimenta",
    "@car": "coche, coches, carro, carros, auto, autos, automovil, automoviles",
    "@flat": "pinchazo, pinchazos, ponchadura, llanta ponchada, rueda pinchada, neumatico pinchado",
    "@vegan": "vegano, vegana, veganos, veganas, sin lactosa, deslactosado, sin lacteos",
    "@dinein": "comer ahi, comer alli, comer aqui, comer en el local, consumir en el local, mesas",
    "@pool": "piscina, piscinas, alberca, albercas, pileta, piletas",
    "@age": "edad, edades, edad minima, anos de edad",
    "@kid": "nino, ninos, nina, ninas, infantil, infantiles, hijo, hija, hijos, hijas, bebe, bebes",
    "@pet": "mascota, mascotas, perro, perros, perrito, perrita, gato, gatos, gatito, gatita",
    "gluten": "sin gluten, celiaco, celiaca, celiacos",
    "@day": "lunes, martes, miercoles, jueves, viernes, sabado, sabados, domingo, domingos, "
    "fin de semana, feriado, feriados, festivo, festivos",
    "@event": "evento, eventos, fiesta, fiestas, celebracion, celebraciones",
    "@class": "clase, clases, curso, cursos, leccion, lecciones",
    "@student": "estudiante, estudiantes, universitario, universitaria, universitarios",
    "@owner": "dueno, duena, duenos, fundo, fundado, fundada, fundador, fundadora",
    "wifi": "wi fi",
    "@track": "rastrear, seguimiento, donde esta mi",
    "@size": "talla, tallas",
    "@park": "aparcamiento, aparcar, parking, estacionamiento, estacionar",
    "@complaint": "pesimo, pesima, horrible, grosero, grosera, maleducado, maleducada, sucio, "
    "sucia, fatal, decepcionado, decepcionada, queja, reclamacion",
    "@praise": "excelente, buenisimo, maravilloso, maravillosa",
    "@wrong": "equivocado, equivocada, equivocados, incorrecto, incorrecta, error, olvidaron, "
    "olvido, faltaba, faltaban, cobrado dos veces, cobraron dos veces, cobrasteis dos veces",
    "": "buenos dias, buenas tardes, buenas noches, por favor, muchas gracias, nos vemos, "
    "se me olvido, me olvide de, "
    "hasta luego",
}

# Generic verbs: they say what is wanted of a topic, not which topic ("do you
# sell skateboards?" is about skateboards); they weigh less than other words.
# So do times of day: they say when, not what ("tarde" is left out: also "late").
_EN_LIGHT = (
    "sell sells buy have has offer offers provide get give bring take use accept allow come "
    "came go goes went see saw find put keep try work other another "
    "today tonight tomorrow morning afternoon evening now"
)
_PT_LIGHT = (
    "vender vendem vende comprar oferecer oferecem aceitar aceitam aceita trazer levar usar dar "
    "passar ir vir ver achar achei acho encontrar conseguir conseguem precisar precisa querem "
    "pouco pouca algum alguma nenhum nenhuma trabalhar outro outra outros outras mesmo mesma "
    "hoje amanha manha noite agora"
)
_ES_LIGHT = (
    "vender venden vendeis comprar ofrecer ofrecen aceptar aceptan aceptais traer llevar usar dar "
    "poner pongo pasar ir voy vas va van venir vengo ver veo dan doy conseguir consigo necesitar "
    "necesitais saber sabeis querer quereis encontrar mismo misma trabajar otro otra otros otras "
    "hoy manana noche ahora"
)

# Word families a suffix stripper cannot join (irregular forms), as stems.
_EN_STEMS = {
    "teeth": "tooth", "paid": "pay", "children": "child", "bought": "buy", "lost": "los",
    "sold": "sell", "sent": "send", "brought": "bring", "kept": "keep", "spent": "spend",
}  # fmt: skip
_PT_STEMS = {"devolu": "devolv", "gratuit": "grati", "mensal": "mes", "mensalidad": "mes"}
_ES_STEMS = {"devolu": "devolv", "mensual": "mes", "mensualidad": "mes"}


# Feelings, and something gone wrong: a message with one is for a human unless
# the training speaks of it too ("my order arrived wrong" has its Q&A).
SENTIMENT = frozenset({"@complaint", "@praise", "@wrong", "@job", "@human"})

# Per language: stop words, slang, concepts, stems, light words.
LEXICONS = {
    "en": (_EN_STOP, _EN_SLANG, _EN_CONCEPTS, _EN_STEMS, _EN_LIGHT),
    "pt": (_PT_STOP, _PT_SLANG, _PT_CONCEPTS, _PT_STEMS, _PT_LIGHT),
    "es": (_ES_STOP, _ES_SLANG, _ES_CONCEPTS, _ES_STEMS, _ES_LIGHT),
}
